//===- DecomposeQuantizeLayer.cpp - Expand gptq.quantize_layer ------------===//

#include "gptq/Dialect/GPTQ/IR/GPTQ.h"
#include "gptq/Dialect/GPTQ/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQDECOMPOSEQUANTIZELAYER
#include "gptq/Dialect/GPTQ/Transforms/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;
using namespace mlir::gptq;

namespace {
struct DecomposeQuantizeLayer : OpRewritePattern<QuantizeLayerOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(QuantizeLayerOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ConfigAttr config = op.getConfig();
    Value weight = op.getWeight();
    Value hessian = op.getHessian();
    auto weightType = cast<RankedTensorType>(weight.getType());
    Type gridType = op.getScales().getType();
    Type gIdxType = op.getGIdx().getType();
    bool perRow = config.getGroupSize() < 0;
    bool fixedGrid = perRow || config.getStaticGroups();

    Value percdamp = op.getPercdamp();
    if (!percdamp)
      percdamp = arith::ConstantOp::create(
          rewriter, loc, rewriter.getF32FloatAttr(config.getPercdampValue()));

    // Per-row grids come from the weights before dead inputs are zeroed.
    Value scales, zeros;
    if (perRow) {
      auto grid = GridOp::create(rewriter, loc, gridType, gridType, weight,
                                 op.getBits(), config);
      scales = grid.getScales();
      zeros = grid.getZeros();
    }
    Value masked =
        MaskDeadInputsOp::create(rewriter, loc, weightType, weight, hessian);
    if (config.getStaticGroups()) {
      auto grid = GridOp::create(rewriter, loc, gridType, gridType, masked,
                                 op.getBits(), config);
      scales = grid.getScales();
      zeros = grid.getZeros();
    }

    Value perm;
    Value ordered = masked;
    Value orderedHessian = hessian;
    if (config.getActOrder()) {
      auto permType = RankedTensorType::get({weightType.getDimSize(1)},
                                            rewriter.getI64Type());
      perm = ActOrderOp::create(rewriter, loc, permType, hessian);
      ordered = PermuteOp::create(rewriter, loc, weightType, masked, perm,
                                  rewriter.getDenseI64ArrayAttr({1}),
                                  /*inverse=*/nullptr);
      orderedHessian = PermuteOp::create(
          rewriter, loc, hessian.getType(), hessian, perm,
          rewriter.getDenseI64ArrayAttr({0, 1}), /*inverse=*/nullptr);
    }

    auto chol = DampedCholeskyOp::create(rewriter, loc, hessian.getType(),
                                         rewriter.getI1Type(), orderedHessian,
                                         percdamp);
    Value cols = tensor::DimOp::create(rewriter, loc, weight, 1);
    Value gIdx =
        GroupIndexOp::create(rewriter, loc, gIdxType, cols, perm, config);

    Value groupMap;
    if (fixedGrid) {
      groupMap = gIdx;
      if (perm)
        groupMap = PermuteOp::create(rewriter, loc, gIdxType, gIdx, perm,
                                     rewriter.getDenseI64ArrayAttr({0}),
                                     /*inverse=*/nullptr);
    }
    Type codesType = op.getCodes().getType();
    auto blocks = QuantizeBlocksOp::create(
        rewriter, loc, codesType, gridType, gridType, rewriter.getF32Type(),
        ordered, chol.getFactor(), scales, zeros, groupMap, op.getBits(),
        config);

    Value codes = blocks.getCodes();
    if (perm)
      codes = PermuteOp::create(rewriter, loc, codesType, codes, perm,
                                rewriter.getDenseI64ArrayAttr({1}),
                                rewriter.getUnitAttr());
    rewriter.replaceOp(op, {codes, blocks.getOutScales(), blocks.getOutZeros(),
                            gIdx, blocks.getLoss(), chol.getOk()});
    return success();
  }
};

struct GPTQDecomposeQuantizeLayerPass
    : gptq::impl::GPTQDecomposeQuantizeLayerBase<
          GPTQDecomposeQuantizeLayerPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateDecomposeQuantizeLayerPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void mlir::gptq::populateDecomposeQuantizeLayerPatterns(
    RewritePatternSet &patterns) {
  patterns.add<DecomposeQuantizeLayer>(patterns.getContext());
}
