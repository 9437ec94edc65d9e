//===- ApproximateMath.cpp - Math functions as arithmetic
//------------------===//

#include "gptq/Codegen/Common/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQAPPROXIMATEMATH
#include "gptq/Codegen/Common/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {
/// Ops replaced by upstream's polynomial approximations in float32.
bool isApproximated(StringRef name) {
  return name == math::ExpOp::getOperationName() ||
         name == math::TanhOp::getOperationName() ||
         name == math::ErfOp::getOperationName() ||
         name == math::ErfcOp::getOperationName() ||
         name == math::Log1pOp::getOperationName() ||
         name == math::ExpM1Op::getOperationName() ||
         name == math::CbrtOp::getOperationName();
}

/// float32, alone or as a vector's elements.
bool isFloat32(Type type) {
  if (auto vector = dyn_cast<VectorType>(type))
    return vector.getElementType().isF32();
  return type.isF32();
}

/// A float32 constant of `type` (a scalar or a vector of them).
Value constantLike(ImplicitLocOpBuilder &b, Type type, double value) {
  auto attr = b.getF32FloatAttr(static_cast<float>(value));
  if (auto vector = dyn_cast<VectorType>(type))
    return arith::ConstantOp::create(b, vector,
                                     SplatElementsAttr::get(vector, attr));
  return arith::ConstantOp::create(b, attr);
}

/// Beyond this magnitude the inverse hyperbolic functions are log(2 x):
/// the terms they drop are below float32's precision, and x^2 would
/// overflow further out.
constexpr double kLarge = 4096.0;

/// log(2 |x|), for |x| beyond kLarge.
Value logTwice(ImplicitLocOpBuilder &b, Value magnitude) {
  Type type = magnitude.getType();
  return arith::AddFOp::create(b, math::LogOp::create(b, magnitude),
                               constantLike(b, type, std::log(2.0)));
}

/// `large` where |x| > kLarge, `small` elsewhere.
Value selectLarge(ImplicitLocOpBuilder &b, Value magnitude, Value large,
                  Value small) {
  Value beyond =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, magnitude,
                            constantLike(b, magnitude.getType(), kLarge));
  return arith::SelectOp::create(b, beyond, large, small);
}

/// asinh(x) = sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2))): exact to a
/// few ulp near zero, where log(|x| + sqrt(x^2 + 1)) cancels.
struct ExpandAsinh : OpRewritePattern<math::AsinhOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::AsinhOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!isFloat32(type))
      return failure();
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value x = op.getOperand();
    Value s = math::AbsFOp::create(b, x);
    Value one = constantLike(b, type, 1.0);
    Value square = arith::MulFOp::create(b, s, s);
    Value root = math::SqrtOp::create(b, arith::AddFOp::create(b, square, one));
    Value fraction =
        arith::DivFOp::create(b, square, arith::AddFOp::create(b, root, one));
    Value small =
        math::Log1pOp::create(b, arith::AddFOp::create(b, s, fraction));
    Value magnitude = selectLarge(b, s, logTwice(b, s), small);
    rewriter.replaceOpWithNewOp<math::CopySignOp>(op, magnitude, x);
    return success();
  }
};

/// acosh(x) = log1p(t + sqrt(2 t + t^2)) with t = x - 1: exact near 1,
/// where log(x + sqrt(x^2 - 1)) cancels; NaN below 1.
struct ExpandAcosh : OpRewritePattern<math::AcoshOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::AcoshOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!isFloat32(type))
      return failure();
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value x = op.getOperand();
    Value t = arith::SubFOp::create(b, x, constantLike(b, type, 1.0));
    Value twice = arith::AddFOp::create(b, t, t);
    Value root = math::SqrtOp::create(
        b, arith::AddFOp::create(b, twice, arith::MulFOp::create(b, t, t)));
    Value small = math::Log1pOp::create(b, arith::AddFOp::create(b, t, root));
    rewriter.replaceOp(op, selectLarge(b, x, logTwice(b, x), small));
    return success();
  }
};

/// atanh(x) = sign(x) log1p(2 |x| / (1 - |x|)) / 2: exact near zero, where
/// log((1 + x) / (1 - x)) / 2 cancels; infinite at 1, NaN beyond.
struct ExpandAtanh : OpRewritePattern<math::AtanhOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::AtanhOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!isFloat32(type))
      return failure();
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value x = op.getOperand();
    Value s = math::AbsFOp::create(b, x);
    Value rest = arith::SubFOp::create(b, constantLike(b, type, 1.0), s);
    Value ratio =
        arith::DivFOp::create(b, arith::AddFOp::create(b, s, s), rest);
    Value half = arith::MulFOp::create(b, math::Log1pOp::create(b, ratio),
                                       constantLike(b, type, 0.5));
    rewriter.replaceOpWithNewOp<math::CopySignOp>(op, half, x);
    return success();
  }
};

bool isExpanded(StringRef name) {
  return name == math::AsinhOp::getOperationName() ||
         name == math::AcoshOp::getOperationName() ||
         name == math::AtanhOp::getOperationName();
}

struct GPTQApproximateMathPass
    : gptq::impl::GPTQApproximateMathBase<GPTQApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // float16 and bfloat16 operands are widened to float32 first, so that
    // the approximations and expansions below apply.
    populateMathF32ExpansionPatterns(patterns, [](StringRef name) {
      return isApproximated(name) || isExpanded(name);
    });
    patterns.add<ExpandAsinh, ExpandAcosh, ExpandAtanh>(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, isApproximated);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
