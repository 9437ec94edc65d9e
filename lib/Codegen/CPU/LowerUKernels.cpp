//===- LowerUKernels.cpp - Calls of the prebuilt microkernel library ------===//
//
// gptq_ukernel ops on buffers become calls of the microkernel library that
// the project builds once per instruction set (lib/UKernels): the module
// keeps a declaration, the library's code is linked when the module runs.
//
//===----------------------------------------------------------------------===//

#include "gptq/Codegen/CPU/CpuIsa.h"
#include "gptq/Codegen/CPU/Passes.h"
#include "gptq/Codegen/CPU/UKernelAbi.h"
#include "gptq/Dialect/UKernel/IR/UKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQLOWERUKERNELS
#include "gptq/Codegen/CPU/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;
using namespace mlir::gptq;

namespace {
/// A buffer of the calling convention's type `abi` holding `value`: a cast
/// where the layouts agree, else a copy into a new buffer (listed in
/// `copies` with the original, to be freed, and for the destination copied
/// back, after the call).
Value abiOperand(OpBuilder &b, Location loc, Value value, MemRefType abi,
                 SmallVectorImpl<std::pair<Value, Value>> &copies) {
  auto type = cast<MemRefType>(value.getType());
  if (type == abi)
    return value;
  if (memref::CastOp::areCastCompatible(type, abi))
    return memref::CastOp::create(b, loc, abi, value);
  SmallVector<Value> sizes;
  for (int64_t i = 0; i < type.getRank(); ++i)
    sizes.push_back(memref::DimOp::create(b, loc, value, i));
  auto dense = MemRefType::get(
      SmallVector<int64_t>(type.getRank(), ShapedType::kDynamic),
      type.getElementType());
  Value copy = memref::AllocOp::create(b, loc, dense, sizes);
  memref::CopyOp::create(b, loc, value, copy);
  copies.push_back({copy, value});
  return dense == abi ? copy : memref::CastOp::create(b, loc, abi, copy);
}

/// Rewrites the microkernel ops of a module into calls of the library:
/// declares each symbol it calls, makes the empty buffers of operands a
/// variant lacks, and converts operands to the calling convention.
class UKernelCalls {
public:
  UKernelCalls(ModuleOp module) : module(module), symbols(module) {}

  /// Replaces `op` by a call of `name`, of signature `abi` (declared once):
  /// `operands(i)` is argument i, a buffer or a scalar; a null buffer is an
  /// empty one. The buffers in `outs` are written by the call; its results
  /// (the op's scalar result, if any) replace the op's.
  LogicalResult
  replace(Operation *op, StringRef name, FunctionType abi,
          llvm::function_ref<Value(OpBuilder &, unsigned)> operands,
          ValueRange outs) {
    if (failed(declare(name, abi)))
      return failure();
    func::CallOp callOp = call(op, name, abi, operands, outs);
    op->replaceAllUsesWith(callOp.getResults());
    op->erase();
    return success();
  }

private:
  /// Declares `name` with the signature `abi`, or checks the declaration
  /// there.
  LogicalResult declare(StringRef name, FunctionType abi) {
    if (Operation *existing = symbols.lookup(name)) {
      auto fn = dyn_cast<func::FuncOp>(existing);
      if (!fn || !fn.isDeclaration() || fn.getFunctionType() != abi)
        return existing->emitError()
               << "symbol '" << name
               << "' is the microkernel library's; it must not be defined "
                  "here";
      return success();
    }
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    auto decl = func::FuncOp::create(b, module.getLoc(), name, abi);
    decl.setPrivate();
    symbols.insert(decl);
    return success();
  }

  /// The call of replace(), before `op`.
  func::CallOp call(Operation *op, StringRef name, FunctionType abi,
                    llvm::function_ref<Value(OpBuilder &, unsigned)> operands,
                    ValueRange outs) {
    OpBuilder b(op);
    Location loc = op->getLoc();
    SmallVector<std::pair<Value, Value>> copies;
    SmallVector<Value> args;
    for (unsigned i = 0; i < abi.getNumInputs(); ++i) {
      Value value = operands(b, i);
      auto type = dyn_cast<MemRefType>(abi.getInput(i));
      if (!type)
        args.push_back(value);
      else if (!value)
        args.push_back(empty(op, type));
      else
        args.push_back(abiOperand(b, loc, value, type, copies));
    }
    auto callOp = func::CallOp::create(b, loc, name, abi.getResults(), args);
    // The destinations' copies go back; every copy is freed.
    for (auto [copy, original] : copies) {
      if (llvm::is_contained(outs, original))
        memref::CopyOp::create(b, loc, copy, original);
      memref::DeallocOp::create(b, loc, copy);
    }
    return callOp;
  }

  /// An empty buffer of `type` for an operand a variant lacks: one of each
  /// type per isolated region (a function's body, or an outlined
  /// region's), made at its entry (not in a loop's body).
  Value empty(Operation *op, MemRefType type) {
    Operation *fn = op->getParentWithTrait<OpTrait::IsIsolatedFromAbove>();
    Value &buffer = empties[{fn, type}];
    if (buffer)
      return buffer;
    OpBuilder entry = OpBuilder::atBlockBegin(&fn->getRegion(0).front());
    SmallVector<int64_t> shape(type.getRank(), 0);
    if (type.getRank() == 3)
      shape[0] = 1; // the matrix kernel slices batch 0 of a matrix stack
    Value alloca = memref::AllocaOp::create(
        entry, fn->getLoc(), MemRefType::get(shape, type.getElementType()));
    buffer = memref::CastOp::create(entry, fn->getLoc(), type, alloca);
    return buffer;
  }

  ModuleOp module;
  SymbolTable symbols;
  DenseMap<std::pair<Operation *, Type>, Value> empties;
};

Value i32Const(OpBuilder &b, Location loc, uint32_t v) {
  return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
}
Value i64Const(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
}
Value f32Const(OpBuilder &b, Location loc, double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
}

LogicalResult lowerMatmul(UKernelCalls &calls, ukernel::MatmulOp op,
                          StringRef name) {
  unsigned halfKind = 0;
  Value bf16, f16;
  if (Value half = op.getHalf()) {
    bool isBF16 = cast<MemRefType>(half.getType()).getElementType().isBF16();
    halfKind = isBF16 ? kUKernelHalfBF16 : kUKernelHalfF16;
    (isBF16 ? bf16 : f16) = half;
  }
  UKernelMatmulVariant variant;
  variant.transposeLhs = op.getTransposeLhs();
  variant.transposeRhs = op.getTransposeRhs();
  variant.zeroInit = op.getZeroInit();
  variant.lowerResult = op.getLowerResult();
  variant.lowerLhs = op.getLowerLhs();
  variant.bits = op.getBits().value_or(0);
  variant.half = halfKind;
  return calls.replace(
      op, name, ukernelMatmulType(op.getContext()),
      [&](OpBuilder &b, unsigned i) -> Value {
        switch (i) {
        case kUKernelMatmulLhs:
          return op.getLhs();
        case kUKernelMatmulRhs:
          return op.getRhs();
        case kUKernelMatmulInit:
          return op.getInit();
        case kUKernelMatmulFlags:
          return i32Const(b, op.getLoc(), ukernelMatmulFlags(variant));
        case kUKernelMatmulPacked:
          return op.getPacked();
        case kUKernelMatmulScales:
          return op.getScales();
        case kUKernelMatmulZeros:
          return op.getZeros();
        case kUKernelMatmulGroups:
          return op.getGIdx();
        case kUKernelMatmulBF16:
          return bf16;
        default:
          return f16;
        }
      },
      op.getInit());
}

LogicalResult lowerCholesky(UKernelCalls &calls, ukernel::DampedCholeskyOp op,
                            CpuIsa isa) {
  Location loc = op.getLoc();
  return calls.replace(
      op, ukernelSymbol("damped_cholesky", isa),
      ukernelCholeskyType(op.getContext()),
      [&](OpBuilder &b, unsigned i) -> Value {
        switch (i) {
        case kUKernelCholeskyHessian:
          return op.getHessian();
        case kUKernelCholeskyPerm:
          return op.getPerm();
        case kUKernelCholeskyFactor:
          return op.getInit();
        case kUKernelCholeskyFlags:
          return i32Const(b, loc, op.getPerm() ? 1 : 0);
        case kUKernelCholeskyPercdamp:
          return op.getPercdamp();
        default:
          return i64Const(b, loc, op.getBlock());
        }
      },
      op.getInit());
}

LogicalResult lowerQuantizeBlocks(UKernelCalls &calls,
                                  ukernel::QuantizeBlocksOp op, CpuIsa isa) {
  Location loc = op.getLoc();
  ConfigAttr config = op.getConfig();
  UKernelQuantizeVariant variant;
  variant.fixedGrids = op.hasFixedGrids();
  variant.sym = config.getSym();
  variant.mse = config.getMse();
  variant.permuted = static_cast<bool>(op.getPerm());
  variant.masked = static_cast<bool>(op.getMaskHessian());
  variant.permuteCodes = op.getPermuteCodes();
  return calls.replace(
      op, ukernelSymbol("quantize_blocks", isa),
      ukernelQuantizeType(op.getContext()),
      [&](OpBuilder &b, unsigned i) -> Value {
        switch (i) {
        case kUKernelQuantizeWeight:
          return op.getWeight();
        case kUKernelQuantizeFactor:
          return op.getFactor();
        case kUKernelQuantizeScalesIn:
          return op.getScales();
        case kUKernelQuantizeZerosIn:
          return op.getZeros();
        case kUKernelQuantizeGroupMap:
          return op.getGroupMap();
        case kUKernelQuantizePerm:
          return op.getPerm();
        case kUKernelQuantizeMask:
          return op.getMaskHessian();
        case kUKernelQuantizeCodes:
        case kUKernelQuantizeScales:
        case kUKernelQuantizeZeros:
          return op.getInits()[i - kUKernelQuantizeCodes];
        case kUKernelQuantizeFlags:
          return i32Const(b, loc, ukernelQuantizeFlags(variant));
        case kUKernelQuantizeGroupSize:
          return i64Const(b, loc, std::max<int64_t>(config.getGroupSize(), 1));
        case kUKernelQuantizeBlockSize:
          return i64Const(b, loc, config.getBlockSize());
        case kUKernelQuantizeMaxQ:
          return buildMaxQ(b, loc, config, op.getBits());
        case kUKernelQuantizeNorm:
          return f32Const(b, loc, config.getMseNormValue());
        case kUKernelQuantizeSteps:
          return i64Const(b, loc, config.getMseSteps());
        default:
          return arith::ConstantOp::create(
              b, loc,
              b.getF64FloatAttr(static_cast<double>(config.getMseGrid())));
        }
      },
      op.getInits());
}

struct GPTQLowerUKernelsPass
    : gptq::impl::GPTQLowerUKernelsBase<GPTQLowerUKernelsPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<CpuKernelForms> forms =
        kernelFormsOfOptions(module, cpuIsa, byteDots);
    if (failed(forms))
      return signalPassFailure();
    SmallVector<Operation *> kernels;
    WalkResult walked = module.walk([&](Operation *op) {
      if (!isa<ukernel::UKernelDialect>(op->getDialect()))
        return WalkResult::advance();
      if (llvm::any_of(op->getResultTypes(), llvm::IsaPred<TensorType>)) {
        op->emitOpError("is still on tensors: bufferize before "
                        "gptq-lower-ukernels");
        return WalkResult::interrupt();
      }
      kernels.push_back(op);
      return WalkResult::advance();
    });
    if (walked.wasInterrupted())
      return signalPassFailure();
    if (kernels.empty())
      return;
    std::string matmul = ukernelMatmulSymbol(*forms);

    UKernelCalls calls(module);
    for (Operation *op : kernels) {
      LogicalResult lowered =
          TypeSwitch<Operation *, LogicalResult>(op)
              .Case([&](ukernel::MatmulOp k) {
                return lowerMatmul(calls, k, matmul);
              })
              .Case([&](ukernel::DampedCholeskyOp k) {
                return lowerCholesky(calls, k, forms->isa);
              })
              .Case([&](ukernel::QuantizeBlocksOp k) {
                return lowerQuantizeBlocks(calls, k, forms->isa);
              })
              .Default([](Operation *k) {
                return k->emitOpError("has no microkernel in the library");
              });
      if (failed(lowered))
        return signalPassFailure();
    }
  }
};
} // namespace
