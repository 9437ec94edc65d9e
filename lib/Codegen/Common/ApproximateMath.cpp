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
Value expandAsinh(ImplicitLocOpBuilder &b, Value x) {
  Value s = math::AbsFOp::create(b, x);
  Value one = constantLike(b, x.getType(), 1.0);
  Value square = arith::MulFOp::create(b, s, s);
  Value root = math::SqrtOp::create(b, arith::AddFOp::create(b, square, one));
  Value fraction =
      arith::DivFOp::create(b, square, arith::AddFOp::create(b, root, one));
  Value small = math::Log1pOp::create(b, arith::AddFOp::create(b, s, fraction));
  Value magnitude = selectLarge(b, s, logTwice(b, s), small);
  return math::CopySignOp::create(b, magnitude, x);
}

/// acosh(x) = log1p(t + sqrt(2 t + t^2)) with t = x - 1: exact near 1,
/// where log(x + sqrt(x^2 - 1)) cancels; NaN below 1.
Value expandAcosh(ImplicitLocOpBuilder &b, Value x) {
  Value t = arith::SubFOp::create(b, x, constantLike(b, x.getType(), 1.0));
  Value twice = arith::AddFOp::create(b, t, t);
  Value root = math::SqrtOp::create(
      b, arith::AddFOp::create(b, twice, arith::MulFOp::create(b, t, t)));
  Value small = math::Log1pOp::create(b, arith::AddFOp::create(b, t, root));
  return selectLarge(b, x, logTwice(b, x), small);
}

/// atanh(x) = sign(x) log1p(2 |x| / (1 - |x|)) / 2: exact near zero, where
/// log((1 + x) / (1 - x)) / 2 cancels; infinite at 1, NaN beyond.
Value expandAtanh(ImplicitLocOpBuilder &b, Value x) {
  Type type = x.getType();
  Value s = math::AbsFOp::create(b, x);
  Value rest = arith::SubFOp::create(b, constantLike(b, type, 1.0), s);
  Value ratio = arith::DivFOp::create(b, arith::AddFOp::create(b, s, s), rest);
  Value half = arith::MulFOp::create(b, math::Log1pOp::create(b, ratio),
                                     constantLike(b, type, 0.5));
  return math::CopySignOp::create(b, half, x);
}

/// Replaces a float32 (scalar or vector) `OpT` with `expand` of its operand.
template <typename OpT, Value (*expand)(ImplicitLocOpBuilder &, Value)>
struct ExpandFloat32 : OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpT op,
                                PatternRewriter &rewriter) const override {
    if (!isFloat32(op.getType()))
      return failure();
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    rewriter.replaceOp(op, expand(b, op.getOperand()));
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
    patterns.add<ExpandFloat32<math::AsinhOp, expandAsinh>,
                 ExpandFloat32<math::AcoshOp, expandAcosh>,
                 ExpandFloat32<math::AtanhOp, expandAtanh>>(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, isApproximated);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
