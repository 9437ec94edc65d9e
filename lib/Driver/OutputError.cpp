//===- OutputError.cpp - A quantized layer's output error -----------------===//
//
// Compiles, once, a function that gives each row's part of
// tr((W - Q) H (W - Q)^T) for a band of rows, and adds the bands' parts.
//
//===----------------------------------------------------------------------===//

#include "gptq/Driver/OutputError.h"

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
  NpyArray band;
  band.dtype = DType::F32;
  band.shape = {count, cols};
  band.data = NpyBuffer::adopt(
      reinterpret_cast<char *>(const_cast<float *>(a.as<float>() + r0 * cols)),
      size_t(count * cols) * sizeof(float), nullptr, [](void *) {});
  return band;
}

/// Each row i of the band: sum_j ((W - Q) H)[i, j] (W - Q)[i, j]. The
/// product is a linalg.matmul, which the CPU pipeline hands to the matrix
/// kernel.
constexpr const char *kSource = R"mlir(
func.func @row_errors(%w: tensor<?x?xf32>, %q: tensor<?x?xf32>, %h: tensor<?x?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %w, %c0 : tensor<?x?xf32>
  %n = tensor.dim %w, %c1 : tensor<?x?xf32>
  %de = tensor.empty(%m, %n) : tensor<?x?xf32>
  %d = linalg.sub ins(%w, %q : tensor<?x?xf32>, tensor<?x?xf32>) outs(%de : tensor<?x?xf32>) -> tensor<?x?xf32>
  %ee = tensor.empty(%m, %n) : tensor<?x?xf32>
  %ez = linalg.fill ins(%zero : f32) outs(%ee : tensor<?x?xf32>) -> tensor<?x?xf32>
  %e = linalg.matmul ins(%d, %h : tensor<?x?xf32>, tensor<?x?xf32>) outs(%ez : tensor<?x?xf32>) -> tensor<?x?xf32>
  %re = tensor.empty(%m) : tensor<?xf32>
  %rz = linalg.fill ins(%zero : f32) outs(%re : tensor<?xf32>) -> tensor<?xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%e, %d : tensor<?x?xf32>, tensor<?x?xf32>) outs(%rz : tensor<?xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}
)mlir";
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
  auto fn = CompiledFunction::compileSource(*context, kSource,
                                            "gptq-output-error", "row_errors",
                                            jit);
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
