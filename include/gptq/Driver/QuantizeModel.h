//===- QuantizeModel.h - GPTQ of every linear layer of a model --*- C++ -*-===//
//
// quantizeModel: calibrates a model inside the compiler and quantizes its
// linear layers (docs/model-quantization.md), with typed options, the run's
// files and, optionally, calibration samples in the caller's memory, a
// report as a struct and the progress lines to a stream of the caller's
// choosing. The pass gptq-quantize-model calls it; so can a pipeline built
// in code (createQuantizeModelPass, docs/pipelines.md has an example; the
// lowerings to add after it are buildCPUPipeline and buildNVVMPipeline,
// gptq/Pipelines/Pipelines.h, the registrations in gptq/InitGPTQ.h).
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_DRIVER_QUANTIZEMODEL_H
#define GPTQ_DRIVER_QUANTIZEMODEL_H

#include "gptq/Driver/Passes.h"
#include "gptq/Quantize/ApplyQuantized.h"
#include "gptq/Quantize/CalibrationStages.h"
#include "gptq/Support/Npy.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class OpPassManager;
namespace gptq {

class RunFiles;

/// How the layers are quantized (method=).
enum class QuantizeMethod {
  /// GPTQ on Hessians from calibration or hessians=.
  GPTQ,
  /// Round to nearest on GPTQ's grids, without calibration.
  RoundToNearest,
};

/// gptq-quantize-model's options, typed: the pass's options
/// (GPTQQuantizeModelOptions, by their C++ names) parsed and checked by
/// fromPassOptions. The defaults are the pass's.
struct QuantizeModelOptions {
  /// The entry whose layers are quantized and that calibration runs;
  /// empty: findEntryFunction's choice.
  std::string entry;
  QuantizeMethod method = QuantizeMethod::GPTQ;
  /// gptq.config's fields.
  int64_t bits = 4, groupSize = -1;
  bool sym = false, actOrder = false, staticGroups = false;
  double percdamp = 0.01;
  int64_t blockSize = 128;
  bool mse = false;
  /// Dampening retries (LayerQuantizerOptions).
  double dampStep = 0.01;
  unsigned maxAttempts = 100;
  /// Layers selected (selectQuantizedLayers).
  std::string include, exclude;
  bool classifier = false, routers = false;
  /// Calibration.
  CalibrationOrder sequential = CalibrationOrder::Layers;
  ExpertCalibration experts = ExpertCalibration::Routed;
  int64_t calibrationBatch = 16;
  /// Token ids lie in [0, vocab); 0: the module's gptq.model vocab_size.
  int64_t vocab = 0;
  /// Layers whose calibration inputs held fewer rows are rounded to
  /// nearest.
  int64_t minTokens = 1;
  /// Bytes of activations kept in memory (the rest goes to disk), and of
  /// Hessians one stage accumulates under sequential=layers (0: no limit).
  uint64_t activationMemory = 0, hessianMemory = 0;
  bool layerErrors = true;
  WeightForm format = WeightForm::Packed;
  /// The files the run reads and writes; empty: none.
  std::string calibration, hessians, parameters, report, dumpHessians,
      dumpStages;
  /// Where compiled code is cached; empty: none.
  std::string compileCache;

  QuantizeModelOptions();
  /// Parses and checks the pass's options; a bad value is an error at
  /// `loc` naming the option, as the pass reports it.
  static FailureOr<QuantizeModelOptions>
  fromPassOptions(const GPTQQuantizeModelOptions &options, Location loc);
};

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

/// What a caller hands quantizeModel besides its options.
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

/// Quantizes the linear layers of `module` as `options` say. The files it
/// reads and writes are checked against `files` (a tool's own, say) and its
/// outputs added to `files`' pending outputs, which the caller commits.
/// Errors are diagnostics on `module`'s context.
LogicalResult quantizeModel(ModuleOp module,
                            const QuantizeModelOptions &options,
                            RunFiles &files, const QuantizeModelIO &io = {});

/// gptq-quantize-model with `options` and `io`. The pass may be added to a
/// PassManager on the ModuleOp; it runs the JIT in the pass.
std::unique_ptr<Pass>
createQuantizeModelPass(const GPTQQuantizeModelOptions &options,
                        QuantizeModelIO io = {});

/// Hands `files` to the gptq-quantize-model passes at the top level of
/// `pm`, which then check their files against them and add their outputs to
/// them, for the caller to commit with its own. Without it (a pass nested
/// deeper, or run by a driver that does not know of it), the pass checks
/// and commits its own files.
void attachRunFiles(OpPassManager &pm, RunFiles &files);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_DRIVER_QUANTIZEMODEL_H
