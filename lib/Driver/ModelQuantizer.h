//===- ModelQuantizer.h - One run of quantizeModel --------------*- C++ -*-===//
//
// The state of one run of quantizeModel and its steps, each in the file
// that says what it does: ModelQuantizer.cpp (the run: options that depend
// on the module, the run's files, the layers and their weights),
// Calibration.cpp (the stages, run batch by batch), LayerSteps.cpp (one
// layer quantized or rounded, and kept), Rewrite.cpp (the weights
// rewritten and the report). Private to lib/Driver.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_DRIVER_MODELQUANTIZER_H
#define GPTQ_DRIVER_MODELQUANTIZER_H

#include "gptq/Driver/ActivationStore.h"
#include "gptq/Driver/ArgumentParameters.h"
#include "gptq/Driver/OutputError.h"
#include "gptq/Driver/QuantizeLayer.h"
#include "gptq/Driver/QuantizeModel.h"
#include "gptq/Execution/Jit.h"
#include "gptq/Quantize/CalibrationStages.h"
#include "gptq/Quantize/LinearLayers.h"
#include "gptq/Support/Npy.h"
#include "gptq/Support/Scratch.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
namespace gptq {
namespace driver {

constexpr llvm::StringLiteral kPassName = "gptq-quantize-model";

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start);
/// The memory the process holds resident now, and its peak so far, in
/// bytes (0 where the system does not say).
int64_t residentBytes();
int64_t peakResidentBytes();
/// "42 s", "3 min 20 s", "1 h 05 min".
std::string formatDuration(double seconds);
/// Hands memory kept for reuse after frees back to the system.
void releaseFreedMemory();

/// The values of a constant as an array (in place, except a splat), or
/// nothing for data of no byte-sized element type.
std::optional<NpyArray> arrayOf(ElementsAttr attr);
/// The transpose of a 2-D float32 array.
NpyArray transposed(const NpyArray &a);

/// What happens to one selected layer, and what came of it.
struct LayerState {
  const LinearLayer *layer = nullptr;
  /// Why calibration cannot reach the layer; empty when it can.
  std::string uncalibrated;
  /// The stage that calibrates it, -1 when none does.
  int64_t stage = -1;
  /// The weight, float32 out x in: made when the layer is quantized
  /// (ensureWeight) and released once it is, so that only the layers being
  /// quantized hold a float32 copy.
  NpyArray weight;
  /// Its bytes as float32, for the report.
  int64_t weightBytes = 0;
  /// format=packed: the codes packed as gptq.pack packs them, the scales,
  /// zeros and g_idx, written to the run's scratch file as the layer is
  /// quantized (and released from memory): their offsets there, and the
  /// packed words per row and the groups.
  struct {
    uint64_t qweight = 0, scales = 0, zeros = 0, gIdx = 0, perm = 0;
    int64_t words = 0, groups = 0;
    /// Whether the columns were sorted by group (sortColumnsByGroup).
    bool sorted = false;
  } spilled;
  /// The bytes of the quantized form, for the report.
  int64_t quantizedBytes = 0;
  /// The accumulated Hessian and its sample count; the rows (tokens) its
  /// inputs held, all batches together (an expert's: those routed to it),
  /// -1 when the Hessian was read from hessians=.
  NpyArray hessian;
  int64_t samples = 0;
  int64_t tokens = 0;
  /// The quantization, and the dequantized weight in the layout the model
  /// stores it (the arguments of later stages read it).
  std::optional<LayerResult> result;
  std::optional<NpyArray> stored;
  std::string method;
  double gptqError = NAN, rtnError = NAN, seconds = 0;
};

/// The memory calibration holds at most, and its parts in the stage that
/// holds the most (docs/model-quantization.md, "Memory").
struct MemoryBound {
  uint64_t total = 0;
  unsigned stage = 0;
  uint64_t resident = 0, constants = 0, weights = 0, hessians = 0,
           workspace = 0, activations = 0, intermediates = 0;
};

/// Where the run's time went, for the report and the summary line.
struct RunTimes {
  double calibrate = 0, compile = 0, quantize = 0, rewrite = 0, total = 0;
  /// Parts of the above: the calibration forwards that accumulate Hessians
  /// and those that propagate the quantized outputs; the seconds in the
  /// compiled layer quantization of the chosen method.
  double hessianForward = 0, propagateForward = 0, quantizeLayer = 0;
  /// Each stage's two forwards, in seconds.
  std::vector<std::pair<double, double>> stages;
};

/// The calibration samples, and their batches as views.
struct Batches {
  NpyArray samples;
  std::vector<NpyArray> batches;
  std::vector<int64_t> start;
};

class ModelQuantizer {
public:
  ModelQuantizer(ModuleOp module, const QuantizeModelOptions &options,
                 RunFiles &files, const QuantizeModelIO &io);
  LogicalResult run();

private:
  // ModelQuantizer.cpp: the run.
  InFlightDiagnostic fail(Location loc);
  llvm::raw_ostream &log();
  bool hasCalibration() const;
  std::string calibrationName() const;
  LogicalResult makeQuantizers();
  LogicalResult checkOptionsForModule();
  LogicalResult addFiles();
  LogicalResult bindParameters();
  LogicalResult selectLayers();
  LogicalResult checkWeights();
  LogicalResult quantizeLayers();
  LogicalResult quantizeWithGivenHessians();
  LogicalResult quantizeCalibrated();
  const NpyArray *constantArray(Operation *op);
  LogicalResult ensureWeight(unsigned index);

  // Calibration.cpp: the stages, batch by batch.
  llvm::Expected<NpyArray> calibrationSamples() const;
  FailureOr<Batches> readBatches();
  LogicalResult checkSamples(const NpyArray &data);
  LogicalResult checkTokenIds(const NpyArray &data);
  LogicalResult cutStages();
  LogicalResult compileAhead();
  LogicalResult calibrate();
  void planLastUses();
  void logMemoryBound();
  LogicalResult runStage(unsigned index, const Batches &batches,
                         Clock::time_point calibrationStart);
  /// A stage's batches through its first function, and through its
  /// second: each Hessian's sample count, and each batch's frontier
  /// between the two, pass from one to the other.
  using Frontier = std::vector<std::vector<ActivationStore::Kept>>;
  LogicalResult accumulateHessians(unsigned index, const Batches &batches,
                                   std::vector<NpyArray> &counts,
                                   Frontier &frontier);
  LogicalResult propagate(unsigned index, const Batches &batches,
                          ArrayRef<NpyArray> counts, Frontier &frontier);
  void printStageProgress(unsigned index, int64_t samples, double seconds,
                          double doneSeconds,
                          Clock::time_point calibrationStart);
  llvm::Expected<std::vector<NpyArray>>
  runBatch(CalibrationStage &stage, const Batches &batches, size_t b,
           bool outputs, ArrayRef<NpyArray> counts,
           ArrayRef<ActivationStore::Kept> frontier);
  void failBatch(unsigned index, const Batches &batches, size_t b,
                 llvm::Error err);
  void releaseBatch(unsigned pass, size_t b);
  void releasePass(unsigned pass);
  LogicalResult keep(ActivationStore::Kept &slot, NpyArray array,
                     unsigned index);
  MemoryBound estimateMemory(int64_t samples, int64_t batch, int64_t extent);
  void releaseFreedMemoryOverBound();

  // LayerSteps.cpp: one layer.
  LogicalResult quantizeLayer(unsigned index);
  LogicalResult roundLayer(unsigned index, llvm::StringRef method);
  LogicalResult record(unsigned index, LayerResult result,
                       llvm::StringRef method, LayerQuantizer &packer,
                       double compiled, Clock::time_point start);
  LogicalResult spill(LayerState &state, const NpyArray &packed,
                      LayerResult &result, const NpyArray &perm);
  LogicalResult outputError(unsigned index, const NpyArray &quantized,
                            double &error, double &compiled);
  void printLayer(unsigned index);

  // Rewrite.cpp: the rewrite, the outputs and the report.
  LogicalResult rewrite();
  int64_t quantizedWeightBytes() const;
  QuantizeModelReport makeReport();
  LogicalResult writeOutputs(const QuantizeModelReport &report);
  std::string reportJson(const QuantizeModelReport &report);
  void printSummary(const QuantizeModelReport &report);

  ModuleOp module;
  const QuantizeModelOptions &options;
  RunFiles &files;
  const QuantizeModelIO &io;
  Clock::time_point startTime;

  func::FuncOp func;
  ConfigAttr config, rtnConfig;
  std::unique_ptr<LayerQuantizer> gptq, rtn;
  std::unique_ptr<OutputError> outputErrors;
  JitOptions jitOptions;
  std::optional<BoundArguments> boundArguments;
  std::optional<LinearLayers> linears;
  std::vector<LayerState> states;
  llvm::DenseMap<Operation *, unsigned> layerOfWeight;
  std::vector<std::shared_ptr<CalibrationStage>> stages;
  llvm::DenseMap<Operation *, NpyArray> constantArrays;
  // The contexts the compiled stages were parsed into, and the stages'
  // compiled functions (CalibrationStage points at them), which read their
  // contexts' data: destroyed first.
  std::vector<std::shared_ptr<MLIRContext>> jitContexts;
  std::vector<std::shared_ptr<CompiledFunction>> stageFunctions;
  unsigned compiledCount = 0;
  // The last pass (2 x stage, + 1 for the outputs) that reads each value
  // that crosses between stages, each layer's weight and other constants.
  llvm::DenseMap<Value, unsigned> lastUse;
  llvm::DenseMap<unsigned, unsigned> lastWeightUse;
  llvm::DenseMap<Operation *, unsigned> lastConstantUse;
  // Every batch's copy of each value that crosses stages, in memory up to
  // activation-memory and on disk beyond it.
  std::optional<ActivationStore> activations;
  llvm::DenseMap<Value, std::vector<ActivationStore::Kept>> store;
  uint64_t activationPeakBytes = 0, activationSpilledBytes = 0;
  MemoryBound memoryBound;
  // format=packed: where the quantized layers go as they are made, and its
  // mapping, which the rewritten module's blobs read.
  std::shared_ptr<ScratchFile> scratch;
  std::shared_ptr<llvm::StringRef> spilledData;
  RunTimes times;
};

} // namespace driver
} // namespace gptq
} // namespace mlir

#endif // GPTQ_DRIVER_MODELQUANTIZER_H
