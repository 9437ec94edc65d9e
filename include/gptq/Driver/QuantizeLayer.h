//===- QuantizeLayer.h - GPTQ of one linear layer ---------------*- C++ -*-===//
//
// The per-layer procedure that gptq-quantize-layer and the model-level passes
// share: checks of the weight and Hessian, a module around
// gptq.quantize_layer compiled once per configuration (the width and the
// dampening are arguments of the code, so configurations that differ only
// in those share it), dampening escalation
// when the Hessian is not positive definite, and the checkpoint arrays. It
// neither prints nor writes files: errors are llvm::Error, warnings go to a
// callback.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_DRIVER_QUANTIZELAYER_H
#define GPTQ_DRIVER_QUANTIZELAYER_H

#include "gptq/Dialect/GPTQ/IR/GPTQ.h"
#include "gptq/Execution/Jit.h"
#include "gptq/Support/Npy.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace mlir {
class MLIRContext;
namespace gptq {

/// How a LayerQuantizer retries and compiles.
struct LayerQuantizerOptions {
  /// Added to percdamp for each retry when the Hessian is not positive
  /// definite (GPTQModel's step).
  double dampStep = 0.01;
  /// Attempts at most, the first included; retries also stop before
  /// percdamp reaches 1.
  unsigned maxAttempts = 100;
  /// How messages name the two settings above (a tool's options, a pass's).
  std::string dampStepName = "--damp-step";
  std::string maxAttemptsName = "--max-attempts";
  JitOptions jit;
};

/// Names of a layer's inputs in errors and warnings (file paths in
/// gptq-quantize-layer, layer names in a model).
struct LayerNames {
  std::string weight;
  std::string hessian;
};

/// GPTQ of one layer, as a checkpoint stores it.
struct LayerResult {
  /// uint8 rows x cols, in the original column order.
  NpyArray codes;
  /// float32 rows x groups.
  NpyArray scales;
  NpyArray zeros;
  /// int32 cols: the group of each original column.
  NpyArray gIdx;
  /// float32 rows x cols: scales and zeros applied to codes through gIdx.
  NpyArray dequantized;
  /// The reference's summed quantization error.
  double loss = 0;
  /// The dampening that succeeded.
  double percdampUsed = 0;
  /// Calls of the compiled code, the first included.
  unsigned attempts = 0;
  /// Seconds spent in the compiled code, summed over attempts (no checks,
  /// no compilation).
  double seconds = 0;
  /// GPU kernels launched by the calls, summed over attempts (device code
  /// and its emulation count alike; zero for CPU code).
  uint64_t kernelLaunches = 0;
};

/// Receives a warning's text, without a prefix ("H.npy: the Hessian is not
/// symmetric ...").
using LayerWarningHandler = llvm::function_ref<void(const llvm::Twine &)>;

/// A number as the quantizer's messages write it, printf's %g (0.03, 1e-12);
/// tools use it for their own lines about the same quantities.
std::string formatNumber(double value);

/// The position of a float32 array's first NaN or infinity, as
/// "nan at [i, j]"; none when every entry is finite.
std::optional<std::string> findNonFinite(const NpyArray &a);

/// Checks escalation options against the requested percdamp: a positive
/// finite step, at least one attempt, and a step that float32 does not lose.
/// The messages name the settings as `options` does.
llvm::Error checkEscalationOptions(double percdamp,
                                   const LayerQuantizerOptions &options);

/// Quantizes layers of one configuration. The code is compiled on the first
/// quantize() whose inputs pass the checks, with dynamic shapes and the
/// dampening as an argument, so it serves every later layer of any shape and
/// every retry. Not thread-safe.
class LayerQuantizer {
public:
  ~LayerQuantizer();

  /// A quantizer for `config` (an attribute of any context; the quantizer
  /// keeps its own). Fails when the options are invalid
  /// (checkEscalationOptions).
  static llvm::Expected<std::unique_ptr<LayerQuantizer>>
  create(ConfigAttr config, const LayerQuantizerOptions &options = {});

  /// Quantizes `weight` (float32 rows x cols) with `hessian` (float32
  /// cols x cols), which move in. Errors name the inputs by `names`;
  /// warnings (an asymmetric Hessian, each dampening retry) go to `warn`
  /// when given.
  llvm::Expected<LayerResult> quantize(NpyArray weight, NpyArray hessian,
                                       const LayerNames &names,
                                       LayerWarningHandler warn = nullptr);

  /// Round to nearest on GPTQ's grids (docs/gptq-semantics.md, section 2):
  /// each row's grid per group (or over the whole row) from the weight's
  /// own values, each weight rounded to it; what quantize() gives with an
  /// identity Hessian, whose inverse factor pushes no error onto other
  /// columns, bit for bit, in rows x cols memory and without the cols x
  /// cols matrix. Min-max grids are computed here; MSE-searched grids by
  /// the library's gptq.grid, compiled on the first such call. act_order
  /// and static_groups do not change round to nearest. `weight` is float32
  /// rows x cols; errors name it `name`.
  llvm::Expected<LayerResult> roundToNearest(const NpyArray &weight,
                                             const std::string &name);

  /// `codes` (uint8 rows x cols, as quantize() gives them) packed as
  /// gptq.pack packs them at the configuration's bits: int32 rows x
  /// ceil(cols * bits / 32), each row a little-endian bit stream. The
  /// library's own packing, compiled on the first call.
  llvm::Expected<NpyArray> pack(const NpyArray &codes);

  /// Compiles (or loads from the cache) what quantize() calls and, with
  /// `packing`, what pack() calls, ahead of their first call: for a caller
  /// that compiles other code at the same time, on other threads. Call it
  /// on any one thread, before the quantizer's other calls.
  llvm::Error prepare(bool packing);

  /// The configuration's percdamp, where escalation starts.
  double percdamp() const { return requestedPercdamp; }
  /// How many times the code was compiled (or loaded from the cache): 1
  /// after the first successful quantize().
  unsigned compilations() const { return compileCount; }
  /// Seconds spent compiling (or loading cached code), the packing's and
  /// the grid search's included; 0 before the first compilation.
  double compileSeconds() const;
  /// Whether the compiled code came from the cache.
  bool fromCache() const;

private:
  LayerQuantizer() = default;
  llvm::Error compile();
  llvm::Error compilePacker();
  /// The quantizer's own context, made on first use.
  MLIRContext &ownContext();
  /// Compiles `module`'s function `entry` into `slot`.
  llvm::Error compileInto(std::unique_ptr<CompiledFunction> &slot,
                          OwningOpRef<ModuleOp> module, llvm::StringRef entry);

  std::unique_ptr<MLIRContext> context;
  /// The configuration the code is compiled with, in a given context: this
  /// one at the default width, which the calls pass instead (the ops'
  /// `bits` operand).
  std::function<ConfigAttr(MLIRContext *)> compiledConfig;
  int64_t bits = 0, groupSize = -1;
  bool sym = false, mse = false;
  double requestedPercdamp = 0;
  LayerQuantizerOptions options;
  std::unique_ptr<CompiledFunction> function, packer, grids;
  unsigned compileCount = 0;
};

} // namespace gptq
} // namespace mlir

#endif // GPTQ_DRIVER_QUANTIZELAYER_H
