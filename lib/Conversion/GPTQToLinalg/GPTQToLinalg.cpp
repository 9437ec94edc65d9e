//===- GPTQToLinalg.cpp - Lower gptq ops to linalg, scf and tensor --------===//
//
// Each gptq op becomes a call of a shape-generic implementation written in
// MLIR (Library.mlir, embedded at build time). Settings are passed as
// constants, so inlining specializes every call site.
//
//===----------------------------------------------------------------------===//

#include "ChunkKernels.h"
#include "gptq/Conversion/Library.h"
#include "gptq/Conversion/Passes.h"
#include "gptq/Dialect/GPTQ/IR/GPTQ.h"
#include "gptq/Dialect/GPTQ/Transforms/DataMovementFolds.h"
#include "gptq/Dialect/UKernel/IR/UKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SetVector.h"

#include <functional>

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_CONVERTGPTQTOLINALG
#define GEN_PASS_DEF_GPTQSELECTKERNELFORMS
#include "gptq/Conversion/Passes.h.inc"
} // namespace gptq
} // namespace mlir

#include "GPTQKernelsCPU.inc"
#include "GPTQKernelsPortable.inc"
#include "GPTQKernelsX86.inc"
#include "GPTQLibrary.inc"

using namespace mlir;
using namespace mlir::gptq;

namespace {
constexpr StringLiteral kPrefix = "__gptq_";
// The functions this pass adds carry kLibraryFunctionAttr: a later run
// takes a function so marked as its own; any other function with a library
// name (a declaration or definition of the input, whatever its signature)
// is refused rather than called.

/// The same tensor type with every dimension dynamic.
Type dynamicType(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return type;
  SmallVector<int64_t> shape(tensor.getRank(), ShapedType::kDynamic);
  return RankedTensorType::get(shape, tensor.getElementType());
}

Value castTo(OpBuilder &b, Location loc, Value v, Type type) {
  if (v.getType() == type)
    return v;
  return tensor::CastOp::create(b, loc, type, v);
}

} // namespace

SmallVector<Value> gptq::callLibrary(OpBuilder &b, Location loc, StringRef name,
                                     ValueRange operands, TypeRange resultTypes,
                                     bool noInline) {
  SmallVector<Value> args;
  for (Value v : operands)
    args.push_back(castTo(b, loc, v, dynamicType(v.getType())));
  SmallVector<Type> callTypes;
  for (Type t : resultTypes)
    callTypes.push_back(dynamicType(t));
  auto call =
      func::CallOp::create(b, loc, (kPrefix + name).str(), callTypes, args);
  call.setNoInline(noInline);
  SmallVector<Value> results;
  for (auto [v, t] : llvm::zip(call.getResults(), resultTypes))
    results.push_back(castTo(b, loc, v, t));
  return results;
}

namespace {

Value indexConst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}
Value f32Const(OpBuilder &b, Location loc, double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
}
Value boolConst(OpBuilder &b, Location loc, bool v) {
  return arith::ConstantOp::create(b, loc, b.getBoolAttr(v));
}

/// The grid settings of a config, in the order the library takes them:
/// maxq (of `bits` when given), sym, mse, norm, steps, grid.
SmallVector<Value> gridArgs(OpBuilder &b, Location loc, ConfigAttr config,
                            Value bits) {
  return {
      buildMaxQ(b, loc, config, bits),
      boolConst(b, loc, config.getSym()),
      boolConst(b, loc, config.getMse()),
      f32Const(b, loc, config.getMseNormValue()),
      indexConst(b, loc, config.getMseSteps()),
      arith::ConstantOp::create(
          b, loc, b.getF64FloatAttr(static_cast<double>(config.getMseGrid())))};
}

Value emptyLike(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                Type elementType) {
  return tensor::EmptyOp::create(b, loc, shape, elementType);
}

/// Ops whose implementation takes exactly the op's operands.
template <typename OpTy>
struct LowerToCall : OpRewritePattern<OpTy> {
  LowerToCall(MLIRContext *ctx, StringRef name)
      : OpRewritePattern<OpTy>(ctx), name(name) {}
  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &b) const override {
    b.replaceOp(op, callLibrary(b, op.getLoc(), name, op->getOperands(),
                                op->getResultTypes()));
    return success();
  }
  std::string name;
};

struct LowerHessianAccumulate : OpRewritePattern<HessianAccumulateOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(HessianAccumulateOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value input = op.getInput();
    auto type = cast<RankedTensorType>(input.getType());
    Value samples;
    if (type.getRank() == 3) {
      samples = arith::IndexCastOp::create(
          b, loc, b.getI64Type(), tensor::DimOp::create(b, loc, input, 0));
      input = tensor::CollapseShapeOp::create(
          b, loc, input, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
    } else {
      samples = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(1));
    }
    b.replaceOp(op,
                callLibrary(b, loc, "hessian_accumulate",
                            {input, op.getHessian(), op.getCount(), samples},
                            op->getResultTypes()));
    return success();
  }
};

/// Appends an optional operand of a library call as the pair (value, true),
/// or (an empty tensor of `emptyShape`, false) when `value` is null.
void appendOptional(OpBuilder &b, Location loc, SmallVectorImpl<Value> &args,
                    Value value, ArrayRef<int64_t> emptyShape,
                    Type elementType) {
  args.push_back(value ? value : emptyLike(b, loc, emptyShape, elementType));
  args.push_back(boolConst(b, loc, static_cast<bool>(value)));
}

/// The call of __gptq_damped_cholesky for `op` on `hessian` (the op's, or
/// the source of a symmetric permutation `perm` folded in).
SmallVector<Value> callDampedCholesky(OpBuilder &b, DampedCholeskyOp op,
                                      int64_t block, Value hessian,
                                      Value perm) {
  Location loc = op.getLoc();
  SmallVector<Value> args = {hessian, op.getPercdamp(),
                             indexConst(b, loc, block)};
  appendOptional(b, loc, args, perm, {0}, b.getI64Type());
  return callLibrary(b, loc, "damped_cholesky", args, op->getResultTypes());
}

struct LowerDampedCholesky : OpRewritePattern<DampedCholeskyOp> {
  LowerDampedCholesky(MLIRContext *ctx, int64_t block)
      : OpRewritePattern(ctx), block(block) {}
  LogicalResult matchAndRewrite(DampedCholeskyOp op,
                                PatternRewriter &b) const override {
    b.replaceOp(op, callDampedCholesky(b, op, block, op.getHessian(), {}));
    return success();
  }
  int64_t block;
};

/// A gather: result[.., j, ..] = source[.., perm[j], ..] on each permuted
/// dimension (with the inverse permutation for `inverse`).
struct LowerPermute : OpRewritePattern<PermuteOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PermuteOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getSource().getType());
    Value perm = op.getPerm();
    if (op.getInverse())
      perm = callLibrary(b, loc, "invert_permutation", {perm},
                         {perm.getType()})[0];
    ArrayRef<int64_t> dims = op.getDims();
    // Matrices of weights and codes: the library's gathers, which run
    // blocks of rows in parallel.
    Type elementType = type.getElementType();
    if (type.getRank() == 2 &&
        (elementType.isF32() || elementType.isInteger(8))) {
      Value rows = boolConst(b, loc, llvm::is_contained(dims, 0));
      Value cols = boolConst(b, loc, llvm::is_contained(dims, 1));
      b.replaceOp(
          op,
          callLibrary(b, loc, elementType.isF32() ? "gather_f32" : "gather_i8",
                      {op.getSource(), perm, perm, rows, cols}, {type}));
      return success();
    }
    SmallVector<Value> dynSizes;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d))
        dynSizes.push_back(tensor::DimOp::create(b, loc, op.getSource(), d));
    Value init = tensor::EmptyOp::create(b, loc, type, dynSizes);
    unsigned rank = type.getRank();
    SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank)};
    SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
    Value source = op.getSource();
    auto generic = linalg::GenericOp::create(
        b, loc, TypeRange{type}, ValueRange{}, ValueRange{init}, maps, iters,
        [&](OpBuilder &nb, Location nloc, ValueRange) {
          SmallVector<Value> indices;
          for (unsigned d = 0; d < rank; ++d) {
            Value idx = linalg::IndexOp::create(nb, nloc, d);
            if (llvm::is_contained(dims, static_cast<int64_t>(d))) {
              Value p = tensor::ExtractOp::create(nb, nloc, perm, idx);
              idx = arith::IndexCastOp::create(nb, nloc, nb.getIndexType(), p);
            }
            indices.push_back(idx);
          }
          Value v = tensor::ExtractOp::create(nb, nloc, source, indices);
          linalg::YieldOp::create(nb, nloc, v);
        });
    b.replaceOp(op, generic.getResults());
    return success();
  }
};

/// Columns per group; one group of all columns for group_size = -1.
Value groupColumns(OpBuilder &b, Location loc, ConfigAttr config,
                   Value weight) {
  if (config.getGroupSize() > 0)
    return indexConst(b, loc, config.getGroupSize());
  Value cols = tensor::DimOp::create(b, loc, weight, 1);
  return arith::MaxSIOp::create(b, loc, cols, indexConst(b, loc, 1));
}

struct LowerGrid : OpRewritePattern<GridOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GridOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    SmallVector<Value> args = {
        op.getWeight(), groupColumns(b, loc, op.getConfig(), op.getWeight())};
    llvm::append_range(args, gridArgs(b, loc, op.getConfig(), op.getBits()));
    b.replaceOp(op, callLibrary(b, loc, "grid", args, op->getResultTypes()));
    return success();
  }
};

/// The call of __gptq_quantize_blocks for `op`, with what `folds` folds
/// in.
SmallVector<Value> callQuantizeBlocks(OpBuilder &b, QuantizeBlocksOp op,
                                      const QuantizeBlocksFolds &folds) {
  Location loc = op.getLoc();
  ConfigAttr config = op.getConfig();
  bool fixed = static_cast<bool>(op.getScales());
  Value scales = op.getScales(), zeros = op.getZeros(),
        groupMap = op.getGroupMap();
  if (!fixed) {
    scales = emptyLike(b, loc, {0, 0}, b.getF32Type());
    zeros = scales;
    groupMap = emptyLike(b, loc, {0}, b.getI32Type());
  }
  SmallVector<Value> args = {
      folds.weight,
      op.getFactor(),
      scales,
      zeros,
      groupMap,
      boolConst(b, loc, fixed),
      indexConst(b, loc, std::max<int64_t>(config.getGroupSize(), 1)),
      indexConst(b, loc, config.getBlockSize())};
  llvm::append_range(args, gridArgs(b, loc, config, op.getBits()));
  appendOptional(b, loc, args, folds.perm(), {0}, b.getI64Type());
  appendOptional(b, loc, args, folds.maskHessian(), {0, 0}, b.getF32Type());
  args.push_back(boolConst(b, loc, static_cast<bool>(folds.unpermute)));
  return callLibrary(b, loc, "quantize_blocks", args, op->getResultTypes());
}

struct LowerQuantizeBlocks : OpRewritePattern<QuantizeBlocksOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(QuantizeBlocksOp op,
                                PatternRewriter &b) const override {
    b.replaceOp(op,
                callQuantizeBlocks(b, op, QuantizeBlocksFolds{op.getWeight()}));
    return success();
  }
};

/// Folds the data movement around the two big consumers into passes they
/// make anyway (DataMovementFolds.h), before the op-by-op lowering. Each
/// fold saves a pass over an n x n matrix and its buffer. Producers left
/// without uses are erased.
void fuseDataMovement(ModuleOp module, int64_t block) {
  SmallVector<DampedCholeskyOp> chols;
  module.walk([&](DampedCholeskyOp op) { chols.push_back(op); });
  for (DampedCholeskyOp op : chols) {
    PermuteOp permute = findCholeskyPermutation(op);
    if (!permute)
      continue;
    OpBuilder b(op);
    replaceFoldedCholesky(op,
                          callDampedCholesky(b, op, block, permute.getSource(),
                                             permute.getPerm()),
                          permute);
  }

  SmallVector<QuantizeBlocksOp> quantizes;
  module.walk([&](QuantizeBlocksOp op) { quantizes.push_back(op); });
  for (QuantizeBlocksOp op : quantizes) {
    QuantizeBlocksFolds folds = findQuantizeBlocksFolds(op);
    if (!folds.any())
      continue;
    OpBuilder b(op);
    replaceFoldedQuantizeBlocks(op, callQuantizeBlocks(b, op, folds), folds);
  }
}

struct LowerGroupIndex : OpRewritePattern<GroupIndexOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GroupIndexOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    ConfigAttr config = op.getConfig();
    // 0: one group; 1: j / group_size; 2: invperm[j] / group_size.
    int32_t mode = 1;
    if (config.getGroupSize() < 0)
      mode = 0;
    else if (op.getPerm() && !config.getStaticGroups())
      mode = 2;
    Value perm = op.getPerm();
    if (!perm)
      perm = emptyLike(b, loc, {0}, b.getI64Type());
    SmallVector<Value> args = {
        op.getColumns(), perm,
        arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(mode)),
        indexConst(b, loc, std::max<int64_t>(config.getGroupSize(), 1))};
    b.replaceOp(op,
                callLibrary(b, loc, "group_index", args, op->getResultTypes()));
    return success();
  }
};

struct LowerPack : OpRewritePattern<PackOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PackOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value bits =
        arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(op.getBits()));
    b.replaceOp(op, callLibrary(b, loc, "pack", {op.getCodes(), bits},
                                op->getResultTypes()));
    return success();
  }
};

struct LowerUnpack : OpRewritePattern<UnpackOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(UnpackOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value bits =
        arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(op.getBits()));
    b.replaceOp(op, callLibrary(b, loc, "unpack",
                                {op.getPacked(), op.getColumns(), bits},
                                op->getResultTypes()));
    return success();
  }
};

struct ConvertGPTQToLinalgPass
    : gptq::impl::ConvertGPTQToLinalgBase<ConvertGPTQToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    if (choleskyBlock < 1) {
      module.emitError() << "cholesky-block must be >= 1, found "
                         << static_cast<int64_t>(choleskyBlock);
      return signalPassFailure();
    }
    std::optional<LibraryKernels> chosen = parseLibraryKernels(kernels);
    if (!chosen) {
      module.emitError() << "kernels must be 'cpu' or 'portable', found '"
                         << kernels << "'";
      return signalPassFailure();
    }
    FailureOr<CpuKernelForms> forms =
        kernelFormsOfOptions(module, cpuIsa, byteDots);
    if (failed(forms))
      return signalPassFailure();
    fuseDataMovement(module, choleskyBlock);
    RewritePatternSet patterns(ctx);
    patterns.add<LowerHessianAccumulate, LowerPermute, LowerGrid,
                 LowerQuantizeBlocks, LowerGroupIndex, LowerPack, LowerUnpack>(
        ctx);
    patterns.add<LowerToCall<ActOrderOp>>(ctx, "act_order");
    patterns.add<LowerToCall<MaskDeadInputsOp>>(ctx, "mask_dead_inputs");
    patterns.add<LowerToCall<DequantizeOp>>(ctx, "dequantize");
    patterns.add<LowerDampedCholesky>(ctx, choleskyBlock);
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyPatternsGreedily(module, std::move(patterns), config)))
      return signalPassFailure();
    bool leftover = false;
    module.walk([&](Operation *op) {
      if (isa<GPTQDialect>(op->getDialect())) {
        op->emitOpError("could not be lowered to linalg");
        leftover = true;
      }
    });
    if (leftover)
      return signalPassFailure();
    if (failed(gptq::addLibraryFunctions(module, *chosen, *forms)))
      return signalPassFailure();
  }
};
} // namespace

std::optional<LibraryKernels> gptq::parseLibraryKernels(StringRef name) {
  if (name == "cpu")
    return LibraryKernels::CPU;
  if (name == "portable")
    return LibraryKernels::Portable;
  return std::nullopt;
}

/// The widths of the chunk kernels: every width that has one (the matrix
/// kernel is built once for all, lib/UKernels).
static SmallVector<unsigned> chunkWidths() {
  SmallVector<unsigned> widths;
  for (unsigned width = kChunkKernelMinBits; width <= kChunkKernelMaxBits;
       ++width)
    widths.push_back(width);
  return widths;
}

/// The suffixes of the forms with target instructions of a CPU kernel's
/// step (KernelsX86.mlir) that `isa` has, in the order they are looked for.
static SmallVector<StringRef> targetFormSuffixes(CpuIsa isa) {
  switch (isa) {
  case CpuIsa::AVX512VNNI:
    return {"_vnni", "_avx512"};
  case CpuIsa::AVX512:
    return {"_avx512"};
  case CpuIsa::AVX2:
    return {"_avx2"};
  case CpuIsa::Generic:
    break;
  }
  return {};
}

/// The x86 forms of the CPU kernels' steps, parsed.
static OwningOpRef<ModuleOp> parseKernelForms(MLIRContext *ctx) {
  ParserConfig config(ctx, /*verifyAfterParse=*/false);
  return parseSourceString<ModuleOp>(kGPTQKernelsX86Source, config,
                                     "gptq-kernels-x86");
}

/// Copies the library functions that the module calls, and those they
/// call, into the module as private functions: each from the chosen kernel
/// file when it defines it, else from the algorithms.
LogicalResult gptq::addLibraryFunctions(ModuleOp module,
                                        LibraryKernels kernels,
                                        const CpuKernelForms &forms) {
  llvm::SetVector<StringRef> wanted;
  auto collect = [&](Operation *root) {
    root->walk([&](func::CallOp call) {
      if (call.getCallee().starts_with(kPrefix))
        wanted.insert(call.getCallee());
    });
  };
  collect(module);
  if (wanted.empty())
    return success();
  // The two files call each other's functions: each is verified as part of
  // the module it is copied into, not alone.
  ParserConfig parserConfig(module.getContext(), /*verifyAfterParse=*/false);
  OwningOpRef<ModuleOp> library = parseSourceString<ModuleOp>(
      kGPTQLibrarySource, parserConfig, "gptq-library");
  bool cpu = kernels == LibraryKernels::CPU;
  OwningOpRef<ModuleOp> kernelLibrary = parseSourceString<ModuleOp>(
      cpu ? kGPTQKernelsCPUSource : kGPTQKernelsPortableSource, parserConfig,
      cpu ? "gptq-kernels-cpu" : "gptq-kernels-portable");
  if (!library || !kernelLibrary)
    return module.emitError("internal error: the gptq implementation "
                            "library does not parse");
  SymbolTable libraryTable(library->getOperation());
  SymbolTable kernelTable(kernelLibrary->getOperation());
  // The forms of the CPU kernels' steps that the byte-dots option chooses
  // (those with target instructions come later, gptq-select-kernel-forms),
  // and the functions those call.
  OwningOpRef<ModuleOp> formLibrary;
  std::optional<SymbolTable> formTable;
  if (cpu && forms.byteDots) {
    formLibrary = parseKernelForms(module.getContext());
    if (!formLibrary)
      return module.emitError("internal error: the gptq implementation "
                              "library does not parse");
    formTable.emplace(formLibrary->getOperation());
  }
  auto targetForm = [&](StringRef name) -> func::FuncOp {
    if (!formTable)
      return {};
    return formTable->lookup<func::FuncOp>((name + "_dots").str());
  };
  // The CPU kernels' steps built for each width (ChunkKernels.h) when the
  // CPU kernels call one.
  OwningOpRef<ModuleOp> chunkLibrary;
  std::optional<SymbolTable> chunkTable;
  auto chunkKernel = [&](StringRef name) -> func::FuncOp {
    if (!cpu || !name.starts_with(kChunkKernelPrefix))
      return {};
    if (!chunkLibrary) {
      chunkLibrary = buildChunkKernels(module.getContext(), chunkWidths());
      chunkTable.emplace(chunkLibrary->getOperation());
    }
    return chunkTable->lookup<func::FuncOp>(name);
  };
  SymbolTable moduleTable(module);
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  for (size_t i = 0; i < wanted.size(); ++i) {
    StringRef name = wanted[i];
    auto fn = targetForm(name);
    if (!fn)
      fn = kernelTable.lookup<func::FuncOp>(name);
    if (!fn)
      fn = chunkKernel(name);
    if (!fn)
      fn = libraryTable.lookup<func::FuncOp>(name);
    if (!fn && formTable)
      fn = formTable->lookup<func::FuncOp>(name);
    if (!fn)
      return module.emitError()
             << "internal error: no implementation '" << name
             << "' in the gptq library with the "
             << (cpu ? "cpu" : "portable") << " kernels";
    if (Operation *existing = moduleTable.lookup(name)) {
      // A previous run of the pass added it; anything else is a clash.
      auto prior = dyn_cast<func::FuncOp>(existing);
      if (prior && prior.isPrivate() && !prior.isDeclaration() &&
          prior->hasAttr(kLibraryFunctionAttr) &&
          prior.getFunctionType() == fn.getFunctionType())
        continue;
      return existing->emitError()
             << "symbol '" << name << "' uses the prefix '" << kPrefix
             << "' reserved for the gptq lowering library";
    }
    auto copy = cast<func::FuncOp>(b.clone(*fn));
    copy.setSymName(name);
    copy.setPrivate();
    copy->setAttr(kLibraryFunctionAttr, b.getUnitAttr());
    moduleTable.insert(copy);
    collect(copy);
  }
  return success();
}

LogicalResult gptq::selectKernelForms(ModuleOp module, CpuIsa isa) {
  SmallVector<StringRef> suffixes = targetFormSuffixes(isa);
  SmallVector<func::FuncOp> steps;
  for (auto f : module.getOps<func::FuncOp>())
    if (f->hasAttr(kLibraryFunctionAttr) && !f.isDeclaration())
      steps.push_back(f);
  if (suffixes.empty() || steps.empty())
    return success();
  OwningOpRef<ModuleOp> formLibrary = parseKernelForms(module.getContext());
  if (!formLibrary)
    return module.emitError("internal error: the gptq implementation "
                            "library does not parse");
  SymbolTable forms(formLibrary->getOperation());
  SymbolTable moduleTable(module);
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  // Functions that the forms call, copied in once each.
  std::function<LogicalResult(Operation *)> addCallees =
      [&](Operation *root) -> LogicalResult {
    WalkResult walked = root->walk([&](func::CallOp call) {
      StringRef callee = call.getCallee();
      if (!callee.starts_with(kPrefix) || moduleTable.lookup(callee))
        return WalkResult::advance();
      auto fn = forms.lookup<func::FuncOp>(callee);
      if (!fn) {
        call.emitError() << "internal error: no implementation '" << callee
                         << "' among the CPU kernels' x86 forms";
        return WalkResult::interrupt();
      }
      auto copy = cast<func::FuncOp>(b.clone(*fn));
      copy.setPrivate();
      copy->setAttr(kLibraryFunctionAttr, b.getUnitAttr());
      moduleTable.insert(copy);
      return failed(addCallees(copy)) ? WalkResult::interrupt()
                                      : WalkResult::advance();
    });
    return failure(walked.wasInterrupted());
  };
  for (func::FuncOp step : steps) {
    func::FuncOp form;
    for (StringRef suffix : suffixes)
      if ((form = forms.lookup<func::FuncOp>((step.getName() + suffix).str())))
        break;
    if (!form)
      continue;
    if (form.getFunctionType() != step.getFunctionType())
      return step.emitError() << "internal error: the x86 form of '"
                              << step.getName() << "' has another type";
    step.getBody().getBlocks().clear();
    IRMapping mapping;
    form.getBody().cloneInto(&step.getBody(), mapping);
    // Out of line only until now: the form is one or a few instructions.
    step->removeAttr("no_inline");
    if (failed(addCallees(step)))
      return failure();
  }
  return success();
}

namespace {
struct GPTQSelectKernelFormsPass
    : gptq::impl::GPTQSelectKernelFormsBase<GPTQSelectKernelFormsPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<CpuKernelForms> forms =
        kernelFormsOfOptions(module, cpuIsa, "auto");
    if (failed(forms) || failed(selectKernelForms(module, forms->isa)))
      return signalPassFailure();
  }
};
} // namespace
