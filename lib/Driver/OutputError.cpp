//===- OutputError.cpp - A quantized layer's output error -----------------===//
//
// Compiles, once, a function that gives each row's part of
// tr((W - Q) H (W - Q)^T) for a band of rows, and adds the bands' parts.
//
//===----------------------------------------------------------------------===//

#include "gptq/Driver/OutputError.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::gptq;

namespace {
llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Rows r0 .. r0 + count of a float32 matrix, read in place.
NpyArray rowBand(const NpyArray &a, int64_t r0, int64_t count) {
  int64_t cols = a.shape[1];
  size_t rowBytes = size_t(cols) * sizeof(float);
  return NpyArray::borrowing(
      DType::F32, {count, cols},
      llvm::ArrayRef(a.data.data() + r0 * rowBytes, count * rowBytes));
}

/// A zero-filled tensor of `type`, whose dynamic sizes are `sizes`.
Value zeros(OpBuilder &b, Location loc, RankedTensorType type, ValueRange sizes,
            Value zero) {
  Value empty = tensor::EmptyOp::create(b, loc, type.getShape(),
                                        type.getElementType(), sizes);
  return linalg::FillOp::create(b, loc, zero, empty).getResult(0);
}

/// Each row i of `e` times `d`, summed: sum_j e[i, j] d[i, j].
Value rowSums(OpBuilder &b, Location loc, Value e, Value d, Value init) {
  MLIRContext *ctx = b.getContext();
  AffineExpr i, j;
  bindDims(ctx, i, j);
  AffineMap whole = AffineMap::get(2, 0, {i, j}, ctx);
  AffineMap row = AffineMap::get(2, 0, {i}, ctx);
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{e, d}, ValueRange{init},
      ArrayRef<AffineMap>{whole, whole, row},
      ArrayRef<utils::IteratorType>{utils::IteratorType::parallel,
                                    utils::IteratorType::reduction},
      [](OpBuilder &nb, Location nloc, ValueRange args) {
        Value product = arith::MulFOp::create(nb, nloc, args[0], args[1]);
        Value sum = arith::AddFOp::create(nb, nloc, args[2], product);
        linalg::YieldOp::create(nb, nloc, sum);
      });
  return generic.getResult(0);
}

/// @row_errors(w, q, h): each row i of the band,
/// sum_j ((W - Q) H)[i, j] (W - Q)[i, j]. The product is a linalg.matmul,
/// which the CPU pipeline hands to the matrix kernel.
OwningOpRef<ModuleOp> buildRowErrors(MLIRContext *ctx) {
  OpBuilder b(ctx);
  Location loc = NameLoc::get(b.getStringAttr("gptq-output-error"));
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto matrix = RankedTensorType::get(
      {ShapedType::kDynamic, ShapedType::kDynamic}, b.getF32Type());
  auto vector = RankedTensorType::get({ShapedType::kDynamic}, b.getF32Type());
  auto fn = func::FuncOp::create(
      b, loc, "row_errors",
      b.getFunctionType({matrix, matrix, matrix}, {vector}));
  b.setInsertionPointToStart(fn.addEntryBlock());
  Value w = fn.getArgument(0), q = fn.getArgument(1), h = fn.getArgument(2);
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  Value m = tensor::DimOp::create(b, loc, w, c0);
  Value n = tensor::DimOp::create(b, loc, w, c1);
  Value empty = tensor::EmptyOp::create(b, loc, matrix.getShape(),
                                        b.getF32Type(), ValueRange{m, n});
  Value d = linalg::SubOp::create(b, loc, ValueRange{w, q}, ValueRange{empty})
                .getResult(0);
  Value e =
      linalg::MatmulOp::create(b, loc, ValueRange{d, h},
                               ValueRange{zeros(b, loc, matrix, {m, n}, zero)})
          .getResult(0);
  Value sums = rowSums(b, loc, e, d, zeros(b, loc, vector, {m}, zero));
  func::ReturnOp::create(b, loc, sums);
  return module;
}
} // namespace

OutputError::OutputError(const JitOptions &jit) : jit(jit) {}
OutputError::~OutputError() = default;

double OutputError::compileSeconds() const {
  return function ? function->compileSeconds() : 0;
}

llvm::Error OutputError::prepare() {
  if (function)
    return llvm::Error::success();
  // A context of its own, as LayerQuantizer's.
  context = makeToolContext();
  auto fn = CompiledFunction::compile(buildRowErrors(context.get()),
                                      "row_errors", jit);
  if (!fn)
    return fn.takeError();
  function = std::move(*fn);
  return llvm::Error::success();
}

llvm::Expected<double> OutputError::compute(const NpyArray &weight,
                                            const NpyArray &quantized,
                                            const NpyArray &hessian) {
  if (weight.dtype != DType::F32 || quantized.dtype != DType::F32 ||
      hessian.dtype != DType::F32 || weight.shape.size() != 2 ||
      quantized.shape != weight.shape || hessian.shape.size() != 2 ||
      hessian.shape[0] != weight.shape[1] ||
      hessian.shape[1] != weight.shape[1])
    return error("output error of " + quantized.describe() + " for " +
                 weight.describe() + " with a Hessian " + hessian.describe() +
                 ": expected float32 rows x cols, rows x cols and cols x cols");
  int64_t rows = weight.shape[0], cols = weight.shape[1];
  if (rows == 0 || cols == 0)
    return 0.0;
  if (llvm::Error err = prepare())
    return std::move(err);
  int64_t band =
      std::clamp<int64_t>(bandBytes / (cols * int64_t(sizeof(float))), 1, rows);
  double total = 0;
  for (int64_t r0 = 0; r0 < rows; r0 += band) {
    int64_t count = std::min(band, rows - r0);
    auto out =
        function->call({rowBand(weight, r0, count),
                        rowBand(quantized, r0, count), hessian.borrowed()},
                       {"weight", "quantized weight", "Hessian"});
    if (!out)
      return out.takeError();
    const float *sums = (*out)[0].as<float>();
    for (int64_t i = 0; i < count; ++i)
      total += sums[i];
  }
  return total / 2;
}
