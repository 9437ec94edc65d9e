//===- UpstreamForm.cpp - A module in upstream MLIR alone -----------------===//
//
// gptq-permute-to-gather, gptq-destinations-to-results,
// gptq-strip-to-upstream and the pipeline that ends with them,
// gptq-to-upstream-pipeline.
//
//===----------------------------------------------------------------------===//

#include "gptq/Conversion/GPTQToUpstream/UpstreamPipeline.h"
#include "gptq/Conversion/Passes.h"
#include "gptq/Dialect/GPTQ/IR/GPTQ.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Quant/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQDESTINATIONSTORESULTS
#define GEN_PASS_DEF_GPTQSTRIPTOUPSTREAM
#define GEN_PASS_DEF_GPTQPERMUTETOGATHER
#include "gptq/Conversion/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;
using namespace mlir::gptq;

namespace {

/// Rewrites the memref arguments of `fn` that it updates in place; an
/// error at the first one it cannot.
LogicalResult destinationsToResults(func::FuncOp fn) {
  if (fn.isDeclaration())
    return success();
  SmallVector<unsigned> updated;
  for (auto [i, type] : llvm::enumerate(fn.getArgumentTypes()))
    if (isa<MemRefType>(type))
      updated.push_back(i);
  if (updated.empty())
    return success();
  auto where = [&](unsigned i) {
    return emitError(fn.getLoc())
           << "argument #" << i << " of '@" << fn.getSymName()
                          << "' (" << fn.getArgumentTypes()[i] << "): ";
  };
  if (!fn.getBody().hasOneBlock())
    return where(updated.front())
           << "the function has more than one block; a memref updated in "
              "place is turned into a result only in a function of one block";
  if (std::optional<SymbolTable::UseRange> uses =
          SymbolTable::getSymbolUses(fn, fn->getParentOp());
      uses && !uses->empty())
    return where(updated.front())
           << "the function is called ('" << uses->begin()->getUser()->getName()
           << "'); only entry points are rewritten";
  Block &block = fn.getBody().front();
  auto ret = dyn_cast<func::ReturnOp>(block.getTerminator());
  if (!ret)
    return emitError(fn.getLoc())
           << "'@" << fn.getSymName() << "' does not end with func.return";

  struct Plan {
    unsigned index;
    bufferization::ToTensorOp read;
    bufferization::MaterializeInDestinationOp write;
    SmallVector<memref::DimOp> dims;
  };
  SmallVector<Plan> plans;
  for (unsigned i : updated) {
    BlockArgument arg = block.getArgument(i);
    auto type = cast<MemRefType>(arg.getType());
    if (!type.getLayout().isIdentity())
      return where(i) << "a memref with a non-identity layout";
    Plan plan{i, nullptr, nullptr, {}};
    for (Operation *user : arg.getUsers()) {
      // Its sizes (checks of the caches' shapes) are the tensor's.
      if (auto dim = dyn_cast<memref::DimOp>(user)) {
        plan.dims.push_back(dim);
        continue;
      }
      if (auto read = dyn_cast<bufferization::ToTensorOp>(user);
          read && !plan.read && read->getBlock() == &block) {
        plan.read = read;
        continue;
      }
      if (auto write = dyn_cast<bufferization::MaterializeInDestinationOp>(user);
          write && !plan.write && write->getBlock() == &block &&
          write.getDest() == arg) {
        plan.write = write;
        continue;
      }
      return where(i) << "used by '" << user->getName()
                      << "'; expected one bufferization.to_tensor of it and "
                         "one bufferization.materialize_in_destination into "
                         "it, in the function's block";
    }
    if (!plan.read || !plan.write)
      return where(i) << "expected one bufferization.to_tensor of it and one "
                         "bufferization.materialize_in_destination into it, "
                         "found "
                      << (plan.read ? "no write" : "no read");
    if (!plan.read->isBeforeInBlock(plan.write))
      return where(i) << "written before it is read";
    plans.push_back(plan);
  }

  // The tensor arguments, the written tensors as new results.
  SmallVector<Value> results(ret.getOperands());
  for (Plan &plan : plans) {
    BlockArgument arg = block.getArgument(plan.index);
    auto memref = cast<MemRefType>(arg.getType());
    arg.setType(
        RankedTensorType::get(memref.getShape(), memref.getElementType()));
    plan.read.getResult().replaceAllUsesWith(arg);
    for (memref::DimOp dim : plan.dims) {
      OpBuilder at(dim);
      dim.replaceAllUsesWith(
          tensor::DimOp::create(at, dim.getLoc(), arg, dim.getIndex())
              .getResult());
      dim.erase();
    }
    results.push_back(plan.write.getSource());
    plan.write.erase();
    plan.read.erase();
  }
  OpBuilder b(ret);
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  fn.setFunctionType(FunctionType::get(fn.getContext(),
                                       block.getArgumentTypes(),
                                       ValueRange(results).getTypes()));
  return success();
}

struct DestinationsToResultsPass
    : public gptq::impl::GPTQDestinationsToResultsBase<
          DestinationsToResultsPass> {
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (failed(destinationsToResults(fn)))
        return signalPassFailure();
  }
};

/// `op` as a linalg.generic that gathers: result[.., j, ..] =
/// source[.., perm[j], ..] along each of its dims. An inverse permutation
/// is gathered by the inverse of a constant `perm`.
LogicalResult permuteToGather(PermuteOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value perm = op.getPerm();
  if (op.getInverse()) {
    DenseIntElementsAttr values;
    if (!matchPattern(perm, m_Constant(&values)))
      return op.emitError()
             << "an inverse permutation has an upstream form only with a "
                "constant permutation";
    SmallVector<int64_t> inverse(values.getNumElements(), -1);
    for (auto [j, v] : llvm::enumerate(values.getValues<int64_t>())) {
      if (v < 0 || v >= int64_t(inverse.size()) || inverse[v] != -1)
        return op.emitError() << "the permutation is not one of [0, "
                              << inverse.size() << ")";
      inverse[v] = int64_t(j);
    }
    perm = arith::ConstantOp::create(
        b, loc, DenseIntElementsAttr::get(values.getType(), inverse));
  }
  auto type = cast<RankedTensorType>(op.getType());
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      sizes.push_back(tensor::DimOp::create(b, loc, op.getSource(), d));
  Value init = tensor::EmptyOp::create(b, loc, type, sizes);
  llvm::SmallDenseSet<int64_t> permuted(op.getDims().begin(),
                                        op.getDims().end());
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(type.getRank())};
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  Value source = op.getSource();
  auto gather = linalg::GenericOp::create(
      b, loc, TypeRange{type}, ValueRange{}, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange) {
        SmallVector<Value> at;
        for (int64_t d = 0; d < type.getRank(); ++d) {
          Value i = linalg::IndexOp::create(nb, nloc, d);
          if (permuted.contains(d)) {
            Value p = tensor::ExtractOp::create(nb, nloc, perm, ValueRange{i});
            i = arith::IndexCastOp::create(nb, nloc, nb.getIndexType(), p);
          }
          at.push_back(i);
        }
        Value v = tensor::ExtractOp::create(nb, nloc, source, at);
        linalg::YieldOp::create(nb, nloc, v);
      });
  op.replaceAllUsesWith(gather.getResult(0));
  op.erase();
  return success();
}

struct PermuteToGatherPass
    : public gptq::impl::GPTQPermuteToGatherBase<PermuteToGatherPass> {
  void runOnOperation() override {
    SmallVector<PermuteOp> ops;
    getOperation()->walk([&](PermuteOp op) { ops.push_back(op); });
    for (PermuteOp op : ops)
      if (failed(permuteToGather(op)))
        return signalPassFailure();
  }
};

bool isGPTQ(Dialect *dialect) {
  return dialect && dialect->getNamespace() == "gptq";
}

struct StripToUpstreamPass
    : public gptq::impl::GPTQStripToUpstreamBase<StripToUpstreamPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (module->hasAttr("gptq.parameters")) {
      module.emitError()
          << "the module's weights are in the parameter archives that "
             "gptq.parameters names, not in it: attach them first "
             "(gptq-load-parameters; in gptq-opt, write the output with "
             "--embed-parameters)";
      return signalPassFailure();
    }
    WalkResult walk = module->walk([&](Operation *op) {
      if (isGPTQ(op->getDialect())) {
        op->emitError() << "'" << op->getName()
                        << "' has no upstream form (gptq-to-quant-types "
                           "rewrites only dequantizations of constant "
                           "weights)";
        return WalkResult::interrupt();
      }
      SmallVector<StringAttr> ours;
      for (NamedAttribute attr : op->getDiscardableAttrs())
        if (attr.getName().getValue().starts_with("gptq."))
          ours.push_back(attr.getName());
      for (StringAttr name : ours)
        op->removeDiscardableAttr(name);
      auto typeOfOurs = [](Type type) {
        bool found = false;
        type.walk([&](Type t) { found |= isGPTQ(&t.getDialect()); });
        return found;
      };
      for (Type type : op->getResultTypes())
        if (typeOfOurs(type)) {
          op->emitError() << "result of type " << type
                          << " from the gptq dialect";
          return WalkResult::interrupt();
        }
      // Inherent attributes (properties) and discardable ones.
      bool attrOfOurs = false;
      for (Attribute attrs : {op->getPropertiesAsAttribute(),
                              Attribute(op->getDiscardableAttrDictionary())})
        if (attrs)
          attrs.walk(
              [&](Attribute a) { attrOfOurs |= isGPTQ(&a.getDialect()); },
              [&](Type t) { attrOfOurs |= isGPTQ(&t.getDialect()); });
      if (attrOfOurs) {
        op->emitError() << "an attribute of '" << op->getName()
                        << "' is from the gptq dialect";
        return WalkResult::interrupt();
      }
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (BlockArgument arg : block.getArguments())
            if (typeOfOurs(arg.getType())) {
              op->emitError() << "a block argument of type " << arg.getType()
                              << " from the gptq dialect";
              return WalkResult::interrupt();
            }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

void mlir::gptq::buildUpstreamPipeline(OpPassManager &pm) {
  pm.addPass(createGPTQToQuantTypes());
  pm.addNestedPass<func::FuncOp>(quant::createLowerQuantOps());
  pm.addPass(createGPTQPermuteToGather());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createGPTQDestinationsToResults());
  pm.addPass(createGPTQStripToUpstream());
}

void mlir::gptq::registerUpstreamPipeline() {
  PassPipelineRegistration<>(
      "gptq-to-upstream-pipeline",
      "A model (float, or quantized by gptq-quantize-model) in upstream MLIR "
      "alone, for other compilers: quantized weights in upstream quant types "
      "lowered to linalg (gptq-to-quant-types, lower-quant-ops), the "
      "activations' permutations of act-order as gathers "
      "(gptq-permute-to-gather), KV caches "
      "as tensor arguments and results (gptq-destinations-to-results), no "
      "gptq op, type or attribute (gptq-strip-to-upstream)",
      buildUpstreamPipeline);
}
