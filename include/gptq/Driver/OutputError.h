//===- OutputError.h - A quantized layer's output error ---------*- C++ -*-===//
//
// tr((W - Q) H (W - Q)^T) / 2, the squared output error of a quantized weight
// Q in place of W over the calibration inputs whose Hessian is H, computed by
// compiled code: (W - Q) H is a product on the CPU matrix kernel, a band of
// rows at a time, never an in x in matrix beside H.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_DRIVER_OUTPUTERROR_H
#define GPTQ_DRIVER_OUTPUTERROR_H

#include "gptq/Execution/Jit.h"
#include "gptq/Support/Npy.h"

#include "llvm/Support/Error.h"

#include <memory>

namespace mlir {
class MLIRContext;
namespace gptq {

/// Output errors of quantized weights. The code is compiled on the first
/// compute() (shapes are dynamic: one compilation serves every layer). Not
/// thread-safe.
class OutputError {
public:
  explicit OutputError(const JitOptions &jit);
  ~OutputError();

  /// tr((W - Q) H (W - Q)^T) / 2 for float32 `weight` and `quantized`
  /// (rows x cols) and `hessian` (cols x cols, symmetric; H = 2/n sum x x^T
  /// makes this the squared output error summed over tokens and averaged
  /// over samples). Rows are taken in bands of at most `bandBytes` of
  /// (W - Q) H; each row's sum is float32, the rows' sums are added in
  /// order in double, so the figure does not depend on the thread count.
  llvm::Expected<double> compute(const NpyArray &weight,
                                 const NpyArray &quantized,
                                 const NpyArray &hessian);

  /// Seconds spent compiling (or loading cached code); 0 before the first
  /// compute().
  double compileSeconds() const;

  /// Compiles (or loads from the cache) what compute() calls, ahead of its
  /// first call: for a caller that compiles other code at the same time, on
  /// other threads. Call it on any one thread, before compute().
  llvm::Error prepare();

  /// Bytes of (W - Q) H (and of W - Q) computed at a time.
  static constexpr int64_t bandBytes = int64_t(32) << 20;

private:
  JitOptions jit;
  std::unique_ptr<MLIRContext> context;
  std::unique_ptr<CompiledFunction> function;
};

} // namespace gptq
} // namespace mlir

#endif // GPTQ_DRIVER_OUTPUTERROR_H
