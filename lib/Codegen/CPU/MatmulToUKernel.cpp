//===- MatmulToUKernel.cpp - Batch matmuls as the CPU matrix microkernel -===//
//
// The CPU schedule of contractions: float32 linalg.batch_matmul ops in the
// normal form of gptq-normalize-contractions become gptq_ukernel.matmul, the
// register-tiled microkernel, with a quantized weight's dequantization and a
// half-precision weight's widening fused into its packing of B.
//
//===----------------------------------------------------------------------===//

#include "gptq/Codegen/CPU/Passes.h"
#include "gptq/Codegen/Common/ContractionForm.h"
#include "gptq/Dialect/GPTQ/IR/GPTQ.h"
#include "gptq/Dialect/UKernel/IR/UKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQMATMULTOUKERNEL
#include "gptq/Codegen/CPU/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {

bool isF32Tensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() == 3 && tensor.getElementType().isF32();
}

/// The init a zero-filled output comes from, or null.
Value zeroFilledInit(Value init) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return nullptr;
  auto constant = fill.getInputs()[0].getDefiningOp<arith::ConstantOp>();
  auto value = constant ? dyn_cast<FloatAttr>(constant.getValue()) : nullptr;
  if (!value || !value.getValue().isPosZero())
    return nullptr;
  return fill.getOutputs()[0];
}

/// The matrix W that B is one batch of, given transposed: B =
/// expand_shape(W) to [1, N, K] (a weight's layout); null otherwise.
Value weightMatrix(Value b, bool transB) {
  if (!transB)
    return nullptr;
  auto expand = b.getDefiningOp<tensor::ExpandShapeOp>();
  if (!expand || expand.getSrcType().getRank() != 2 ||
      expand.getResultType().getDimSize(0) != 1)
    return nullptr;
  return expand.getSrc();
}

/// A quantized weight that B reads: `B = expand(dequantize(unpack(words)))`
/// with one batch, B given transposed ([1, N, K], the weight's layout).
struct QuantizedWeight {
  gptq::UnpackOp unpack;
  gptq::DequantizeOp dequantize;
};

std::optional<QuantizedWeight> quantizedWeight(Value b, bool transB) {
  Value w = weightMatrix(b, transB);
  auto dequantize = w ? w.getDefiningOp<gptq::DequantizeOp>() : nullptr;
  if (!dequantize)
    return std::nullopt;
  auto unpack = dequantize.getCodes().getDefiningOp<gptq::UnpackOp>();
  if (!unpack)
    return std::nullopt;
  return QuantizedWeight{unpack, dequantize};
}

/// A float weight that B reads widened from half precision:
/// `B = expand(linalg.generic { arith.extf })` of a bfloat16 or float16
/// matrix (as an import-hf module widens a checkpoint's weights), one batch,
/// B given transposed.
struct WidenedWeight {
  linalg::GenericOp widen;
  Value stored; // tensor<N x K x bf16 or f16>
};

std::optional<WidenedWeight> widenedWeight(Value b, bool transB) {
  Value w = weightMatrix(b, transB);
  auto widen = w ? w.getDefiningOp<linalg::GenericOp>() : nullptr;
  if (!widen || widen.getNumDpsInputs() != 1 || widen.getNumDpsInits() != 1 ||
      !widen.hasPureTensorSemantics() ||
      widen.getNumParallelLoops() != widen.getNumLoops() ||
      !llvm::all_of(widen.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return std::nullopt;
  Value stored = widen.getDpsInputs()[0];
  auto type = dyn_cast<RankedTensorType>(stored.getType());
  if (!type || type.getRank() != 2 ||
      !(type.getElementType().isBF16() || type.getElementType().isF16()))
    return std::nullopt;
  // The body is exactly `yield extf(in)`.
  Block &body = widen.getRegion().front();
  if (!llvm::hasSingleElement(body.without_terminator()))
    return std::nullopt;
  auto ext = dyn_cast<arith::ExtFOp>(body.front());
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (!ext || ext.getIn() != body.getArgument(0) || !ext.getType().isF32() ||
      yield.getValues().size() != 1 || yield.getValues()[0] != ext.getResult())
    return std::nullopt;
  return WidenedWeight{widen, stored};
}

/// Replaces each tensor.dim of `value` with a constant index by
/// `size(index)`, so that a size read off a fused operand keeps nothing of
/// it alive.
void redirectDims(
    PatternRewriter &rewriter, Value value,
    llvm::function_ref<Value(OpBuilder &, Location, int64_t)> size) {
  for (OpOperand &use : llvm::make_early_inc_range(value.getUses())) {
    auto dim = dyn_cast<tensor::DimOp>(use.getOwner());
    std::optional<int64_t> index = dim ? dim.getConstantIndex() : std::nullopt;
    if (!index)
      continue;
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(dim);
    rewriter.replaceOp(dim, size(rewriter, dim.getLoc(), *index));
  }
}

struct LowerBatchMatmul : OpRewritePattern<linalg::BatchMatmulOp> {
  LowerBatchMatmul(MLIRContext *ctx, bool fuseDequantize, bool fuseWidening)
      : OpRewritePattern(ctx), fuseDequantize(fuseDequantize),
        fuseWidening(fuseWidening) {}
  bool fuseDequantize, fuseWidening;

  LogicalResult matchAndRewrite(linalg::BatchMatmulOp op,
                                PatternRewriter &rewriter) const override {
    bool transA = false, transB = false;
    if (!op.hasPureTensorSemantics() ||
        !gptq::isNormalBatchMatmul(op, transA, transB))
      return rewriter.notifyMatchFailure(op, "not in the normal form");
    Value a = op.getDpsInputs()[0], b = op.getDpsInputs()[1];
    Value init = op.getDpsInits()[0];
    if (!isF32Tensor(a.getType()) || !isF32Tensor(b.getType()) ||
        !isF32Tensor(init.getType()))
      return rewriter.notifyMatchFailure(op, "not float32 of rank 3");
    Value c = init;
    Value zeroed = zeroFilledInit(init);
    if (zeroed)
      c = zeroed;
    Location loc = op.getLoc();
    // A quantized weight is dequantized inside the kernel's packing of B.
    std::optional<QuantizedWeight> weight;
    if (fuseDequantize)
      weight = quantizedWeight(b, transB);
    std::optional<WidenedWeight> widened;
    if (fuseWidening && !weight)
      widened = widenedWeight(b, transB);
    Value rhs = b, packed, scales, zeros, groups, half;
    IntegerAttr bits;
    if (weight) {
      // Sizes read off the weight come from its words and grids instead, so
      // that nothing keeps the dequantized weight alive.
      redirectDims(rewriter, weight->dequantize.getResult(),
                   [&](OpBuilder &builder, Location at, int64_t index) {
                     return index == 0 ? tensor::DimOp::create(
                                             builder, at,
                                             weight->dequantize.getScales(), 0)
                                             .getResult()
                                       : weight->unpack.getColumns();
                   });
      rhs = nullptr;
      packed = weight->unpack.getPacked();
      scales = weight->dequantize.getScales();
      zeros = weight->dequantize.getZeros();
      groups = weight->dequantize.getGIdx();
      bits = rewriter.getI64IntegerAttr(weight->unpack.getBits());
    } else if (widened) {
      // A weight stored in half precision is widened inside the kernel's
      // packing of B: its float32 copy is never formed.
      Value stored = widened->stored;
      redirectDims(rewriter, widened->widen->getResult(0),
                   [&](OpBuilder &builder, Location at, int64_t index) {
                     return tensor::DimOp::create(builder, at, stored, index)
                         .getResult();
                   });
      rhs = nullptr;
      half = stored;
    }
    // The triangles a causal mask leaves (gptq-normalize-contractions).
    auto unit = [&](bool set) {
      return set ? rewriter.getUnitAttr() : UnitAttr();
    };
    auto kernel = gptq::ukernel::MatmulOp::create(
        rewriter, loc, op->getResultTypes(), a, rhs, packed, scales, zeros,
        groups, half, c, unit(transA), unit(transB), unit(zeroed != nullptr),
        unit(op->hasAttr(gptq::kLowerResultAttr)),
        unit(op->hasAttr(gptq::kLowerLhsAttr)), bits);
    rewriter.replaceOp(op, kernel->getResults());
    return success();
  }
};

struct GPTQMatmulToUKernelPass
    : gptq::impl::GPTQMatmulToUKernelBase<GPTQMatmulToUKernelPass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<LowerBatchMatmul>(&getContext(), fuseDequantize, fuseWidening);
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
  }
};
} // namespace
