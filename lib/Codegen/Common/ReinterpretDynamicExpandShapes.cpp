//===- ReinterpretDynamicExpandShapes.cpp - Around an upstream crash
//-------===//

#include "gptq/Codegen/Common/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQREINTERPRETDYNAMICEXPANDSHAPES
#include "gptq/Codegen/Common/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {
/// True when a group of `op` has two or more dynamic output sizes.
bool splitsIntoDynamicSizes(memref::ExpandShapeOp op) {
  ArrayRef<int64_t> shape = op.getResultType().getShape();
  for (const ReassociationIndices &group : op.getReassociationIndices())
    if (llvm::count_if(group, [&](int64_t d) {
          return ShapedType::isDynamic(shape[d]);
        }) >= 2)
      return true;
  return false;
}

struct ReinterpretExpandShape : OpRewritePattern<memref::ExpandShapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(memref::ExpandShapeOp op,
                                PatternRewriter &rewriter) const override {
    if (!splitsIntoDynamicSizes(op))
      return failure();
    Location loc = op.getLoc();
    auto metadata =
        memref::ExtractStridedMetadataOp::create(rewriter, loc, op.getSrc());
    SmallVector<OpFoldResult> sizes = op.getMixedOutputShape();
    SmallVector<OpFoldResult> strides(sizes.size());
    for (auto [source, group] : llvm::enumerate(op.getReassociationIndices())) {
      // Innermost first: its stride is the source dimension's; each one
      // outward is the next one's times its size.
      OpFoldResult stride = metadata.getStrides()[source];
      for (int64_t d : llvm::reverse(group)) {
        strides[d] = stride;
        Value product = arith::MulIOp::create(
            rewriter, loc,
            getValueOrCreateConstantIndexOp(rewriter, loc, stride),
            getValueOrCreateConstantIndexOp(rewriter, loc, sizes[d]));
        stride = product;
      }
    }
    // Static sizes and strides as attributes, where the type has them.
    ArrayRef<int64_t> shape = op.getResultType().getShape();
    for (auto [d, size] : llvm::enumerate(shape))
      if (!ShapedType::isDynamic(size))
        sizes[d] = rewriter.getIndexAttr(size);
    SmallVector<int64_t> typeStrides;
    int64_t typeOffset;
    if (failed(op.getResultType().getStridesAndOffset(typeStrides, typeOffset)))
      return failure();
    for (auto [d, stride] : llvm::enumerate(typeStrides))
      if (!ShapedType::isDynamic(stride))
        strides[d] = rewriter.getIndexAttr(stride);
    OpFoldResult offset = ShapedType::isDynamic(typeOffset)
                              ? OpFoldResult(metadata.getOffset())
                              : OpFoldResult(rewriter.getIndexAttr(typeOffset));
    rewriter.replaceOpWithNewOp<memref::ReinterpretCastOp>(
        op, op.getResultType(), metadata.getBaseBuffer(), offset, sizes,
        strides);
    return success();
  }
};

struct GPTQReinterpretDynamicExpandShapesPass
    : gptq::impl::GPTQReinterpretDynamicExpandShapesBase<
          GPTQReinterpretDynamicExpandShapesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ReinterpretExpandShape>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
