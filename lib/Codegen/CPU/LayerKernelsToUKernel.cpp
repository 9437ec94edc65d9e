//===- LayerKernelsToUKernel.cpp - GPTQ's layer kernels as microkernels ---===//
//
// The CPU schedule of a layer's quantization: gptq.damped_cholesky and
// gptq.quantize_blocks become the microkernel ops that call the library's
// prebuilt kernels, with the data movement around them folded in as
// convert-gptq-to-linalg folds it.
//
//===----------------------------------------------------------------------===//

#include "gptq/Codegen/CPU/Passes.h"
#include "gptq/Dialect/GPTQ/IR/GPTQ.h"
#include "gptq/Dialect/GPTQ/Transforms/DataMovementFolds.h"
#include "gptq/Dialect/UKernel/IR/UKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQLAYERKERNELSTOUKERNEL
#include "gptq/Codegen/CPU/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;
using namespace mlir::gptq;

namespace {
/// An empty tensor of `type` whose dynamic sizes are `sizes(d)`.
Value emptyOf(OpBuilder &b, Location loc, Type type,
              llvm::function_ref<Value(unsigned)> sizes) {
  auto tensor = cast<RankedTensorType>(type);
  SmallVector<Value> dynamic;
  for (unsigned d = 0; d < tensor.getRank(); ++d)
    if (tensor.isDynamicDim(d))
      dynamic.push_back(sizes(d));
  return tensor::EmptyOp::create(b, loc, tensor, dynamic);
}

Value dim(OpBuilder &b, Location loc, Value v, int64_t d) {
  return tensor::DimOp::create(b, loc, v, d);
}

void lowerCholesky(DampedCholeskyOp op, int64_t block) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value hessian = op.getHessian(), perm;
  PermuteOp permute = findCholeskyPermutation(op);
  if (permute) {
    hessian = permute.getSource();
    perm = permute.getPerm();
  }
  Type type = op.getFactor().getType();
  Value size;
  Value init = emptyOf(b, loc, type, [&](unsigned) {
    return size ? size : size = dim(b, loc, hessian, 0);
  });
  auto kernel = ukernel::DampedCholeskyOp::create(
      b, loc, TypeRange{type, b.getI1Type()}, hessian, perm, op.getPercdamp(),
      init, b.getI64IntegerAttr(block));
  replaceFoldedCholesky(op, kernel->getResults(), permute);
}

void lowerQuantizeBlocks(QuantizeBlocksOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  QuantizeBlocksFolds folds = findQuantizeBlocksFolds(op);
  Value weight = folds.weight;
  ConfigAttr config = op.getConfig();
  Value rows = dim(b, loc, weight, 0);
  Value cols = dim(b, loc, weight, 1);
  Value codes = emptyOf(b, loc, op.getCodes().getType(),
                        [&](unsigned d) { return d == 0 ? rows : cols; });
  // Fixed grids come back as they came; computed ones have a column per
  // group of columns.
  Value groupCount;
  auto groups = [&](unsigned d) -> Value {
    if (d == 0)
      return rows;
    if (groupCount)
      return groupCount;
    if (Value scales = op.getScales())
      return groupCount = dim(b, loc, scales, 1);
    Value size = arith::ConstantIndexOp::create(b, loc, config.getGroupSize());
    return groupCount = arith::CeilDivSIOp::create(b, loc, cols, size);
  };
  Value scales = emptyOf(b, loc, op.getOutScales().getType(), groups);
  Value zeros = emptyOf(b, loc, op.getOutZeros().getType(), groups);
  SmallVector<Type> types = {codes.getType(), scales.getType(), zeros.getType(),
                             b.getF32Type()};
  auto kernel = ukernel::QuantizeBlocksOp::create(
      b, loc, types, weight, op.getFactor(), op.getScales(), op.getZeros(),
      op.getGroupMap(), folds.perm(), folds.maskHessian(), op.getBits(),
      ValueRange{codes, scales, zeros}, config,
      folds.unpermute ? b.getUnitAttr() : UnitAttr());
  replaceFoldedQuantizeBlocks(op, kernel->getResults(), folds);
}

struct GPTQLayerKernelsToUKernelPass
    : gptq::impl::GPTQLayerKernelsToUKernelBase<GPTQLayerKernelsToUKernelPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (choleskyBlock < 1) {
      module.emitError() << "cholesky-block must be >= 1, found "
                         << static_cast<int64_t>(choleskyBlock);
      return signalPassFailure();
    }
    SmallVector<DampedCholeskyOp> chols;
    module.walk([&](DampedCholeskyOp op) { chols.push_back(op); });
    for (DampedCholeskyOp op : chols)
      lowerCholesky(op, choleskyBlock);
    SmallVector<QuantizeBlocksOp> quantizes;
    module.walk([&](QuantizeBlocksOp op) { quantizes.push_back(op); });
    for (QuantizeBlocksOp op : quantizes)
      lowerQuantizeBlocks(op);
  }
};
} // namespace
