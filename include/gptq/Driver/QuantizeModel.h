//===- QuantizeModel.h - gptq-quantize-model from C++ -----------*- C++ -*-===//
//
// The model pass for pipelines built in code: its options as a struct (the
// ODS-generated GPTQQuantizeModelOptions, the pass's options by their C++
// names), calibration samples in the caller's memory instead of a file, the
// report as a struct instead of JSON, and the progress lines to a stream of
// the caller's choosing. docs/pipelines.md has an example; the lowerings to
// add after it are buildCPUPipeline and buildNVVMPipeline
// (gptq/Pipelines/Pipelines.h), the registrations in gptq/InitGPTQ.h.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_DRIVER_QUANTIZEMODEL_H
#define GPTQ_DRIVER_QUANTIZEMODEL_H

#include "gptq/Driver/Passes.h"
#include "gptq/Support/Npy.h"

#include "mlir/Pass/Pass.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
namespace gptq {

/// One quantized layer, as the report= JSON gives it.
struct QuantizedLayerReport {
  std::string name;
  /// The weight's shape, out x in (the nn.Linear layout).
  int64_t out = 0, in = 0;
  /// Its `layers.<i>.` block, and the calibration stage that calibrated it.
  std::optional<int64_t> block, stage;
  /// The sample count of its Hessian, as the reference procedure counts
  /// (a call's 2-D input is one sample); 0 when the Hessians were given
  /// or the layer was not calibrated.
  int64_t samples = 0;
  /// The rows (tokens) of its calibration inputs, all samples together: an
  /// expert's are the tokens routed to it; 0 when samples is.
  int64_t tokens = 0;
  /// Whether it is an expert of a mixture of experts (LinearLayer::expert).
  bool expert = false;
  /// "gptq", "rtn", "rtn (not calibrated)" or "rtn (too few tokens)"
  /// (min-tokens).
  std::string method;
  double seconds = 0;
  /// Output errors tr((W - Q) H (W - Q)^T) / 2 of the weights made and of
  /// round to nearest on the same grids (layer-errors=true, calibrated).
  std::optional<double> error, rtnError;
  /// GPTQ only: its loss, the dampening used and the attempts it took.
  std::optional<double> loss, percdamp;
  std::optional<int64_t> attempts;
};

/// What a run of gptq-quantize-model did.
struct QuantizeModelReport {
  std::string entry;
  std::vector<QuantizedLayerReport> layers;
  /// Layers whose Hessian needed more dampening ("name (percdamp p)"), and
  /// layers of method=gptq that were rounded to nearest instead.
  std::vector<std::string> escalated, roundedToNearest;
  /// The quantized layers' weights as float32, and in the written form.
  int64_t weightBytes = 0, quantizedWeightBytes = 0;
  double totalSeconds = 0, calibrationSeconds = 0, compileSeconds = 0,
         quantizeSeconds = 0;
  /// The process's peak resident memory, and the bound the pass estimated.
  int64_t peakResidentBytes = 0, memoryBoundBytes = 0;
};

/// What a pipeline hands the pass besides its options.
struct QuantizeModelIO {
  /// Calibration samples in the caller's memory, used instead of
  /// `calibration=FILE.npy`: the entry's argument for every sample along
  /// dimension 0 (int32 tokens [samples, length] for an imported model).
  /// Read in place; it must stay valid while the pass runs.
  std::optional<NpyView> calibration;
  /// Filled when the pass succeeds (left as it is when it fails).
  QuantizeModelReport *report = nullptr;
  /// Where the progress and summary lines go; nullptr: stderr. Warnings
  /// and errors are diagnostics, as always.
  llvm::raw_ostream *log = nullptr;
};

/// gptq-quantize-model with `options` and `io`. The pass may be added to a
/// PassManager on the ModuleOp; it runs the JIT in the pass.
std::unique_ptr<Pass>
createQuantizeModelPass(const GPTQQuantizeModelOptions &options,
                        QuantizeModelIO io = {});

} // namespace gptq
} // namespace mlir

#endif // GPTQ_DRIVER_QUANTIZEMODEL_H
