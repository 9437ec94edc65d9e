//===- QuantizeModel.cpp - GPTQ of every linear layer of a model ----------===//
//
// Calibrates a model inside the compiler and quantizes its linear layers, as
// the reference's Llama driver does: the entry function is cut into stages,
// one per group of layers calibrated together. Each stage becomes two
// compiled functions (weights and other large constants are arguments): the
// first runs on the calibration samples batch by batch to accumulate its
// layers' Hessians and keeps what the layers read; its layers are quantized
// through gptq.quantize_layer; the second computes, from what was kept and the
// quantized weights, what the next stages read. Finally each weight is
// rewritten to packed codes with unpack/dequantize in front of its
// contraction.
//
//===----------------------------------------------------------------------===//

#include "gptq/Driver/QuantizeModel.h"
#include "gptq/Dialect/GPTQ/IR/GPTQ.h"
#include "gptq/Execution/CompileJobs.h"
#include "gptq/Execution/Jit.h"
#include "gptq/Execution/Parameters.h"
#include "gptq/Driver/ActivationStore.h"
#include "gptq/Quantize/ApplyQuantized.h"
#include "gptq/Driver/ArgumentParameters.h"
#include "gptq/Quantize/CalibrationStages.h"
#include "gptq/Quantize/EntryFunction.h"
#include "gptq/Quantize/LinearLayers.h"
#include "gptq/Driver/MemoryEstimate.h"
#include "gptq/Driver/OutputError.h"
#include "gptq/Driver/Passes.h"
#include "gptq/Quantize/QuantTypes.h"
#include "gptq/Driver/QuantizeLayer.h"
#include "gptq/Runtime/Allocator.h"
#include "gptq/Support/MappedPages.h"
#include "gptq/Support/Npy.h"
#include "gptq/Support/Npz.h"
#include "gptq/Support/Output.h"
#include "gptq/Support/Scratch.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/Quant/IR/Quant.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Parallel.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdio>
#include <sys/resource.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <cmath>
#include <map>

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQQUANTIZEMODEL
#include "gptq/Driver/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;
using namespace mlir::gptq;

namespace {

constexpr StringLiteral kPassName = "gptq-quantize-model";

/// Hands memory kept for reuse after frees back to the system: calibration
/// frees hundreds of MB of activations after each pass, which the compiled
/// code's allocator and malloc would otherwise keep for buffers of the same
/// sizes, which the next stage does not ask for.
void releaseFreedMemory() {
  runtime::releaseCachedBuffers();
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

/// The memory the process holds resident now, in bytes (0 where the
/// system does not say).
int64_t residentBytes() {
  std::FILE *statm = std::fopen("/proc/self/statm", "r");
  if (!statm)
    return 0;
  long size = 0, resident = 0;
  int read = std::fscanf(statm, "%ld %ld", &size, &resident);
  std::fclose(statm);
  return read == 2 ? int64_t(resident) * sysconf(_SC_PAGESIZE) : 0;
}

/// "42 s", "3 min 20 s", "1 h 05 min".
std::string formatDuration(double seconds) {
  long s = long(std::max(seconds, 0.0) + 0.5);
  char text[48];
  if (s < 60)
    std::snprintf(text, sizeof text, "%ld s", s);
  else if (s < 3600)
    std::snprintf(text, sizeof text, "%ld min %02ld s", s / 60, s % 60);
  else
    std::snprintf(text, sizeof text, "%ld h %02ld min", s / 3600,
                  s % 3600 / 60);
  return text;
}

/// The most memory the process has held resident so far, in bytes.
int64_t peakResidentBytes() {
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0)
    return 0;
  return int64_t(usage.ru_maxrss) * 1024; // kilobytes on Linux
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

/// An array over `size` bytes at `data` that it does not own (arguments of
/// compiled code are read-only, so calls need no copies).
NpyArray view(DType dtype, std::vector<int64_t> shape, const char *data,
              size_t size) {
  NpyArray v;
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.data =
      NpyBuffer::adopt(const_cast<char *>(data), size, nullptr, [](void *) {});
  return v;
}

/// An array that reads `a`'s data without owning it.
NpyArray view(const NpyArray &a) { return a.borrowed(); }

/// The values of a constant as an array: raw little-endian data of a
/// `dense` or `dense_resource` attribute of a byte-sized element type. The
/// array reads the attribute's data in place (the context keeps it), except
/// for a splat, which is expanded.
std::optional<NpyArray> arrayOf(ElementsAttr attr) {
  auto type = cast<ShapedType>(attr.getType());
  // i1 is stored bit-packed, not as the bytes of a bool array.
  std::optional<DType> dtype = dtypeOfElementType(type.getElementType());
  if (!dtype || *dtype == DType::Bool || !type.hasStaticShape())
    return std::nullopt;
  std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
  size_t bytes = size_t(type.getNumElements()) * dtypeSize(*dtype);
  if (auto dense = dyn_cast<DenseElementsAttr>(attr);
      dense && dense.isSplat()) {
    ArrayRef<char> raw = dense.getRawData();
    size_t elem = dtypeSize(*dtype);
    if (raw.size() != elem)
      return std::nullopt;
    NpyArray a = NpyArray::zeros(*dtype, std::move(shape));
    for (size_t i = 0; i < bytes; i += elem)
      std::memcpy(a.data.data() + i, raw.data(), elem);
    return a;
  }
  std::optional<ArrayRef<char>> raw = rawElementData(attr);
  if (!raw || raw->size() != bytes)
    return std::nullopt;
  return view(*dtype, std::move(shape), raw->data(), bytes);
}

/// The transpose of a 2-D float32 array.
NpyArray transposed(const NpyArray &a) {
  int64_t rows = a.shape[0], cols = a.shape[1];
  NpyArray t = NpyArray::zeros(DType::F32, {cols, rows});
  const float *src = a.as<float>();
  float *dst = t.as<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      dst[c * rows + r] = src[r * cols + c];
  return t;
}

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
  /// zeros and g_idx, written to the pass's scratch file as the layer is
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

struct QuantizeModelPass
    : public gptq::impl::GPTQQuantizeModelBase<QuantizeModelPass> {
  using Base::Base;
  QuantizeModelPass(const GPTQQuantizeModelOptions &options,
                    QuantizeModelIO io)
      : Base(options), io(std::move(io)) {}

  // From a pipeline built in code (createQuantizeModelPass).
  QuantizeModelIO io;
  /// Where the progress lines go.
  llvm::raw_ostream &log() { return io.log ? *io.log : llvm::errs(); }
  /// Whether calibration samples are given, as a file or in memory.
  bool hasCalibration() const {
    return !calibration.empty() || io.calibration.has_value();
  }
  /// The calibration samples in messages.
  std::string calibrationName() const {
    return calibration.empty() ? std::string("the calibration samples")
                               : "calibration=" + std::string(calibration);
  }
  /// The calibration samples: the file read, or the caller's memory.
  llvm::Expected<NpyArray> calibrationSamples() const;

  InFlightDiagnostic fail(Location loc) {
    signalPassFailure();
    return emitError(loc) << kPassName << ": ";
  }

  void runOnOperation() override;

  // Set up by runOnOperation.
  ModuleOp module;
  func::FuncOp func;
  std::vector<LayerState> states;
  llvm::DenseMap<Operation *, unsigned> layerOfWeight;
  // Shared pointers: passes are copyable.
  std::vector<std::shared_ptr<CalibrationStage>> stages;
  llvm::DenseMap<Operation *, NpyArray> constantArrays;
  // The contexts the compiled stages were parsed into.
  std::vector<std::shared_ptr<MLIRContext>> jitContexts;
  // The stages' compiled functions (CalibrationStage points at them),
  // which read their contexts' data: destroyed first.
  std::vector<std::shared_ptr<CompiledFunction>> stageFunctions;
  JitOptions jitOptions;
  // layer-errors: the output errors of the quantized weights.
  std::shared_ptr<OutputError> outputErrors;
  // The grids of round to nearest: the configuration without act-order
  // and static groups.
  ConfigAttr rtnConfig;
  // format=packed: where the quantized layers go as they are made, and its
  // mapping, which the rewritten module's blobs read.
  std::shared_ptr<ScratchFile> scratch;
  std::shared_ptr<StringRef> spilledData;
  // The run's files when no tool made a RunFiles (a pass run from a
  // library): the pass checks and commits its own.
  std::shared_ptr<RunFiles> ownFiles;
  unsigned compiledCount = 0;
  double calibrateSeconds = 0, compileSeconds = 0, quantizeSeconds = 0;
  // Parts of the above, for the report's "timing": the calibration forwards
  // that accumulate Hessians and those that propagate the quantized outputs;
  // the seconds in the compiled layer quantization of the chosen method.
  double hessianForwardSeconds = 0, propagateForwardSeconds = 0;
  double quantizeLayerSeconds = 0;
  /// Each stage's two forwards, in seconds, for the report's "stages": where
  /// calibration time goes, stage by stage.
  std::vector<std::pair<double, double>> stageSeconds;
  // activation-memory, in bytes; the most activations held in memory and
  // the bytes that went to disk.
  uint64_t activationBudget = 0;
  /// moe-calibration, parsed.
  ExpertCalibration expertCalibration = ExpertCalibration::Routed;
  /// hessian-memory, in bytes.
  uint64_t hessianBudget = 0;
  uint64_t activationPeakBytes = 0, activationSpilledBytes = 0;

  /// The entry cut into calibration stages (cutCalibrationStages).
  LogicalResult cutStages();
  /// Compiles the stages and what quantizing with `gptq` calls, side by
  /// side (runCompileJobs).
  LogicalResult compileAhead(LayerQuantizer &gptq);
  LogicalResult calibrate(LayerQuantizer &gptq, LayerQuantizer &rtn);
  MemoryBound estimateMemory(int64_t samples, int64_t batch, int64_t extent,
                             const llvm::DenseMap<Value, unsigned> &lastUse);
  MemoryBound memoryBound;
  LogicalResult quantizeLayer(unsigned index, LayerQuantizer &gptq,
                              LayerQuantizer &rtn);
  LogicalResult roundLayer(unsigned index, LayerQuantizer &rtn,
                           StringRef method);
  /// Keeps layer `index`'s result (its codes packed by `packer` under
  /// format=packed, and written to the scratch file).
  LogicalResult record(unsigned index, LayerResult result, StringRef method,
                       LayerQuantizer &packer, double compiled,
                       std::chrono::steady_clock::time_point start);
  /// The output error of `quantized` in place of layer `index`'s weight,
  /// into `error`; its compilation counts into `compiled`.
  LogicalResult outputError(unsigned index, const NpyArray &quantized,
                            double &error, double &compiled);
  const NpyArray *constantArray(Operation *op);
  LogicalResult ensureWeight(unsigned index);
  /// Between passes: gives freed memory back to the system unless the
  /// compiled code's allocator keeps at most one batch's intermediates for
  /// reuse and that fits in the memory bound beside what is resident.
  /// Mapping fresh memory for every pass costs a page fault per page
  /// written (docs/model-quantization.md, "Memory").
  void releaseFreedMemoryOverBound();
  LogicalResult rewrite(ConfigAttr config);
  void printLayer(unsigned index);
};

} // namespace

/// A float32 copy of a float array (float32, float16 or bfloat16).
static NpyArray widened(const NpyArray &a) {
  NpyArray wide = NpyArray::zeros(DType::F32, a.shape);
  widenToFloat32(a.dtype, a.data.data(), a.numElements(), wide.as<float>());
  return wide;
}

LogicalResult QuantizeModelPass::cutStages() {
  std::vector<const LinearLayer *> layers;
  SmallVector<bool> calibrated;
  for (const LayerState &state : states) {
    layers.push_back(state.layer);
    calibrated.push_back(state.uncalibrated.empty());
  }
  StageCutOptions options;
  options.sequential = sequential;
  options.experts = expertCalibration;
  options.hessianBudget = hessianBudget;
  FailureOr<CalibrationStages> cut = cutCalibrationStages(
      module, func, layers, calibrated, layerOfWeight, options, kPassName);
  if (failed(cut)) {
    signalPassFailure();
    return failure();
  }
  stages = std::move(cut->stages);
  for (auto [state, stage] : llvm::zip_equal(states, cut->stageOf))
    state.stage = stage;
  return success();
}

LogicalResult QuantizeModelPass::compileAhead(LayerQuantizer &gptq) {
  // Each distinct stage function once: a model's layers repeat the same
  // code with other weights, which are arguments.
  std::vector<std::string> texts;
  std::map<std::string, unsigned> jobOfText;
  std::vector<std::pair<unsigned, unsigned>> jobOfStage;
  auto textJob = [&](ModuleOp stageModule) -> unsigned {
    std::string text;
    llvm::raw_string_ostream os(text);
    stageModule.print(os);
    auto [it, inserted] = jobOfText.try_emplace(text, texts.size());
    if (inserted)
      texts.push_back(std::move(text));
    return it->second;
  };
  for (auto &stage : stages)
    jobOfStage.emplace_back(
        textJob(*stage->hessianModule),
        stage->outputModule ? textJob(*stage->outputModule) : ~0u);
  // The stage functions in one module per thread (a module of its own
  // each would pay each time for what a module costs whatever its size),
  // then the quantizer's code, the packing's and the output errors' too,
  // which the first layer would otherwise compile after the first stage.
  unsigned threads = llvm::hardware_concurrency().compute_thread_count();
  std::vector<CompileJob> jobs = groupedCompileJobs(
      texts, "calibration-stage", "stage", jitOptions, threads, stageFunctions);
  jobs.push_back([&](MLIRContext &) {
    return gptq.prepare(/*packing=*/format == "packed");
  });
  if (layerErrors)
    jobs.push_back([&](MLIRContext &) { return outputErrors->prepare(); });

  auto start = std::chrono::steady_clock::now();
  llvm::Error err = runCompileJobs(jobs, jitContexts);
  compileSeconds += secondsSince(start);
  if (err) {
    fail(func.getLoc()) << "compiling the calibration: "
                        << llvm::toString(std::move(err));
    return failure();
  }
  compiledCount = texts.size();
  for (auto [stage, job] : llvm::zip_equal(stages, jobOfStage)) {
    stage->hessians = stageFunctions[job.first].get();
    if (job.second != ~0u)
      stage->propagate = stageFunctions[job.second].get();
  }
  return success();
}

const NpyArray *QuantizeModelPass::constantArray(Operation *op) {
  auto it = constantArrays.find(op);
  if (it != constantArrays.end())
    return &it->second;
  // A layer's widened weight: float32 values of the stored ones.
  if (auto ext = dyn_cast<arith::ExtFOp>(op)) {
    Operation *def = ext.getIn().getDefiningOp();
    std::optional<NpyArray> stored =
        def ? arrayOf(constantElements(def)) : std::nullopt;
    if (!stored)
      return nullptr;
    return &constantArrays.try_emplace(op, widened(*stored)).first->second;
  }
  std::optional<NpyArray> a = arrayOf(constantElements(op));
  if (!a)
    return nullptr;
  return &constantArrays.try_emplace(op, std::move(*a)).first->second;
}

LogicalResult QuantizeModelPass::ensureWeight(unsigned index) {
  LayerState &state = states[index];
  if (state.weight.data.size())
    return success();
  const LinearLayer &layer = *state.layer;
  // A widened weight is the calibration's widened copy (one copy for
  // both); else the constant's data, in place.
  std::optional<NpyArray> w;
  if (layer.weightSource != layer.weightConstant) {
    if (const NpyArray *wide = constantArray(layer.weightSource))
      w = view(*wide);
  } else {
    w = arrayOf(layer.weightAttr);
  }
  if (!w) {
    fail(layer.weightSource->getLoc())
        << "layer '" << layer.name
        << "': its weight has no data (a dense_resource whose blob is "
           "missing or elided)";
    return failure();
  }
  state.weight = layer.transposed ? transposed(*w) : std::move(*w);
  if (std::optional<std::string> bad = findNonFinite(state.weight)) {
    fail(layer.weightSource->getLoc())
        << "layer '" << layer.name << "': its weight has " << *bad;
    return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Calibration and quantization
//===----------------------------------------------------------------------===//

/// The quantizer's compiled code and what it maps, which the estimate
/// cannot see before the first layer is quantized.
constexpr uint64_t kQuantizerCodeBytes = 64ull << 20;

MemoryBound QuantizeModelPass::estimateMemory(
    int64_t samples, int64_t batch, int64_t extent,
    const llvm::DenseMap<Value, unsigned> &lastUse) {
  MemoryBound worst;
  uint64_t resident = uint64_t(residentBytes()) + kQuantizerCodeBytes;
  auto bytesOf = [&](Type type, int64_t lead) {
    return tensorBytes(type, lead, extent);
  };
  // What crosses between stages is a value of the entry, whose sizes follow
  // from the samples' (token rows, an expert's share of a dispatch).
  EntryShapes allSamples(func, samples, extent), oneCall(func, batch, extent);
  for (auto [index, stagePtr] : llvm::enumerate(stages)) {
    CalibrationStage &stage = *stagePtr;
    MemoryBound b;
    b.stage = index;
    b.resident = resident;
    // Constants other than layer weights: their pages (an embedding table
    // gathered at random) and a widened copy where the model widens one.
    for (const StageArg &arg : stage.args) {
      if (arg.kind != StageArg::Constant || layerOfWeight.count(arg.constant))
        continue;
      b.constants += bytesOf(arg.constant->getResult(0).getType(), 1);
      if (auto ext = dyn_cast<arith::ExtFOp>(arg.constant))
        b.constants += bytesOf(ext.getIn().getType(), 1);
    }
    // Each layer's dequantized weight until the stage's outputs are made;
    // one at a time its stored pages and float32 copy; the Hessians; the
    // largest layer's quantizer workspace, with what its output errors take
    // under layer-errors.
    uint64_t largest = 0;
    for (unsigned m : stage.layers) {
      const LinearLayer &layer = *states[m].layer;
      uint64_t cells = uint64_t(layer.outFeatures) * uint64_t(layer.inFeatures);
      b.weights += cells * 4;
      largest = std::max(
          largest,
          cells * 4 + bytesOf(layer.weightConstant->getResult(0).getType(), 1));
      b.hessians += uint64_t(layer.inFeatures) * uint64_t(layer.inFeatures) * 4;
      b.workspace = std::max(
          b.workspace,
          quantizerWorkspaceBytes(layer.outFeatures, layer.inFeatures) +
              (layerErrors
                   ? layerErrorBytes(layer.outFeatures, layer.inFeatures,
                                     OutputError::bandBytes)
                   : 0));
    }
    b.weights += largest;
    // Activations: what crosses into the stage and what it makes, for all
    // samples, the frontier between its two functions included.
    uint64_t crossing = 0, oneBatch = 0;
    for (auto [producer, other] : llvm::enumerate(stages)) {
      if (producer > index)
        break;
      for (Value v : other->outputs)
        if (producer == index || lastUse.lookup(v) >= 2 * index) {
          crossing += allSamples.bytes(v);
          oneBatch += oneCall.bytes(v);
        }
    }
    auto fn = cast<func::FuncOp>(
        stage.hessianModule->lookupSymbol("stage"));
    // After the Hessians, their counts and the rows of their inputs.
    unsigned frontierFrom = 3 * stage.hessianResults.size();
    for (Type t : fn.getFunctionType().getResults().drop_front(frontierFrom)) {
      crossing += bytesOf(t, samples);
      oneBatch += bytesOf(t, batch);
    }
    b.activations = std::min<uint64_t>(crossing, activationBudget);
    // One call's intermediates, and its spilled inputs read back.
    b.intermediates = peakIntermediateBytes(fn, batch, extent);
    if (stage.outputModule)
      b.intermediates = std::max(
          b.intermediates,
          peakIntermediateBytes(
              cast<func::FuncOp>(stage.outputModule->lookupSymbol("stage")),
              batch, extent));
    if (crossing > activationBudget)
      b.intermediates += oneBatch;
    b.total = b.resident + b.constants + b.weights + b.hessians +
              b.workspace + b.activations + b.intermediates;
    if (b.total > worst.total)
      worst = b;
  }
  return worst;
}

llvm::Expected<NpyArray> QuantizeModelPass::calibrationSamples() const {
  if (!io.calibration)
    return readNpy(calibration);
  const NpyView &given = *io.calibration;
  std::optional<int64_t> bytes =
      checkedByteCount(given.shape, dtypeSize(given.dtype));
  if (!bytes || uint64_t(*bytes) != given.data.size())
    return llvm::createStringError(
        "the calibration samples' shape " + given.describe() + " takes " +
        (bytes ? std::to_string(*bytes) : std::string("too many")) +
        " bytes, the buffer given holds " + std::to_string(given.data.size()));
  return view(given.dtype, given.shape, given.data.data(), given.data.size());
}

LogicalResult QuantizeModelPass::calibrate(LayerQuantizer &gptq,
                                           LayerQuantizer &rtn) {
  Location loc = module.getLoc();
  auto data = calibrationSamples();
  if (!data) {
    fail(loc) << calibrationName() << ": "
              << llvm::toString(data.takeError());
    return failure();
  }
  // The calibration file holds the entry's (only) argument, sample by
  // sample along dimension 0.
  FunctionType type = func.getFunctionType();
  if (type.getNumInputs() != 1) {
    fail(func.getLoc()) << "'@" << func.getSymName() << "' takes "
                        << type.getNumInputs()
                        << " arguments; calibration takes one .npy for the "
                           "entry's only argument";
    return failure();
  }
  auto argType = dyn_cast<RankedTensorType>(type.getInput(0));
  std::optional<DType> want =
      argType ? dtypeOfElementType(argType.getElementType()) : std::nullopt;
  if (!want) {
    fail(func.getLoc()) << "'@" << func.getSymName() << "' takes "
                        << type.getInput(0)
                        << "; calibration needs a ranked tensor of a numeric "
                           "type";
    return failure();
  }
  bool shapeOk =
      data->dtype == *want && int64_t(data->shape.size()) == argType.getRank();
  for (int64_t d = 1; shapeOk && d < argType.getRank(); ++d)
    shapeOk =
        argType.isDynamicDim(d) || argType.getDimSize(d) == data->shape[d];
  if (!shapeOk || data->shape.empty() || data->shape[0] == 0) {
    fail(loc) << calibrationName() << ": found " << data->describe()
              << ", expected " << dtypeName(*want) << " samples of '@"
              << func.getSymName() << "''s argument " << type.getInput(0)
              << " along dimension 0 (at least one sample)";
    return failure();
  }
  // Samples of no elements (windows of zero tokens) reach every layer with
  // nothing: a zero Hessian, which would quantize every weight to zero.
  for (size_t d = 1; d < data->shape.size(); ++d)
    if (data->shape[d] == 0) {
      fail(loc) << calibrationName() << ": found "
                << data->describe() << ": its samples are empty (dimension "
                << d << " is 0); each sample needs at least one element";
      return failure();
    }
  if (!argType.isDynamicDim(0) && argType.getDimSize(0) != calibrationBatch) {
    fail(func.getLoc()) << "'@" << func.getSymName()
                        << "' takes a static batch of " << argType.getDimSize(0)
                        << "; set calibration-batch=" << argType.getDimSize(0);
    return failure();
  }
  // A static batch takes whole batches only: samples left over would be
  // calibrated on by no one, while the report counted them.
  if (int64_t batch = argType.getDimSize(0);
      !argType.isDynamicDim(0) && data->shape[0] % batch) {
    fail(loc) << calibrationName() << ": " << data->shape[0]
              << " samples do not fill '@" << func.getSymName()
              << "''s static batches of " << batch << " ("
              << data->shape[0] % batch
              << " would be left out): give a multiple of " << batch
              << " samples, or a function of a dynamic batch";
    return failure();
  }

  // Token ids against the vocabulary (vocab=, else the importers'
  // gptq.model) and the model's context: before anything runs.
  auto model = module->getAttrOfType<DictionaryAttr>("gptq.model");
  if (vocab < 0) {
    fail(loc) << "vocab=" << static_cast<int64_t>(vocab)
              << ": expected a positive vocabulary size (0: the module's)";
    return failure();
  }
  if ((model || vocab > 0) &&
      (data->dtype == DType::I32 || data->dtype == DType::I64)) {
    int64_t bound = vocab;
    std::string range = "the range [0, vocab = " + std::to_string(bound) + ")";
    if (bound == 0)
      if (auto size = model.getAs<IntegerAttr>("vocab_size")) {
        bound = size.getInt();
        range =
            "the model's range [0, vocab_size = " + std::to_string(bound) + ")";
      }
    auto seqLen = model ? model.getAs<IntegerAttr>("seq_len") : IntegerAttr();
    if (seqLen && data->shape.size() == 2 && data->shape[1] > seqLen.getInt()) {
      fail(loc) << calibrationName() << ": windows of "
                << data->shape[1] << " tokens are longer than the model's "
                << "seq_len = " << seqLen.getInt();
      return failure();
    }
    int64_t cols = data->shape.size() >= 2 ? data->shape.back() : 1;
    for (int64_t i = 0, n = data->numElements(); bound > 0 && i < n; ++i) {
      int64_t id = data->dtype == DType::I32 ? data->as<int32_t>()[i]
                                             : data->as<int64_t>()[i];
      if (id >= 0 && id < bound)
        continue;
      fail(loc) << calibrationName() << ": token id " << id << " at ["
                << i / cols << ", " << i % cols << "] is out of " << range;
      return failure();
    }
  }
  int64_t samples = data->shape[0];
  int64_t rowBytes = data->data.size() / samples;
  std::vector<NpyArray> batches;
  std::vector<int64_t> batchStart;
  for (int64_t s = 0; s < samples; s += calibrationBatch) {
    int64_t n = std::min<int64_t>(calibrationBatch, samples - s);
    std::vector<int64_t> shape = data->shape;
    shape[0] = n;
    batches.push_back(view(data->dtype, std::move(shape),
                           data->data.data() + s * rowBytes, n * rowBytes));
    batchStart.push_back(s);
  }

  if (failed(cutStages()) || failed(compileAhead(gptq)))
    return failure();

  log() << kPassName << ": calibrating on " << samples << " samples in "
               << batches.size() << " batches, " << stages.size() << " stage"
               << (stages.size() == 1 ? "" : "s") << " (" << compiledCount
               << " function" << (compiledCount == 1 ? "" : "s")
               << " compiled)\n";

  // The last pass (2 x stage, + 1 for the outputs) that reads each value
  // that crosses between stages, and each layer's weight: both are freed
  // after it (the quantized weights are kept when the rewrite writes them).
  llvm::DenseMap<Value, unsigned> lastUse;
  llvm::DenseMap<unsigned, unsigned> lastWeightUse;
  llvm::DenseMap<Operation *, unsigned> lastConstantUse;
  for (auto [index, stage] : llvm::enumerate(stages)) {
    for (unsigned part : {0u, 1u}) {
      unsigned pass = 2 * index + part;
      const std::vector<unsigned> *used =
          part == 0 ? &stage->hessianArgs : &stage->outputArgs;
      for (unsigned i : *used) {
        const StageArg &arg = stage->args[i];
        if (arg.kind == StageArg::Crossing)
          lastUse[arg.value] = pass;
        if (arg.kind != StageArg::Constant)
          continue;
        if (auto it = layerOfWeight.find(arg.constant);
            it != layerOfWeight.end())
          lastWeightUse[it->second] = pass;
        else
          lastConstantUse[arg.constant] = pass;
      }
    }
  }
  // Every batch's copy of each value that crosses stages, in memory up to
  // activation-memory and on disk beyond it.
  ActivationStore activations(activationBudget);
  llvm::DenseMap<Value, std::vector<ActivationStore::Kept>> store;
  {
    // Other dynamic dimensions than the batch are those of the samples (the
    // length of a token window).
    int64_t extent = 1;
    for (int64_t d : ArrayRef<int64_t>(data->shape).drop_front())
      extent = std::max(extent, d);
    memoryBound = estimateMemory(samples, calibrationBatch, extent, lastUse);
    const MemoryBound &m = memoryBound;
    auto mib = [](uint64_t bytes) { return (bytes + (1 << 19)) >> 20; };
    log() << llvm::formatv(
        "{0}: memory bound {1} MiB, in stage {2}/{3}: {4} MiB resident now "
        "(code, module, calibration data), {5} MiB constants, {6} MiB "
        "weights, {7} MiB Hessians, {8} MiB quantizer workspace, {9} MiB "
        "activations (activation-memory {10} MiB), {11} MiB one batch's "
        "intermediates\n",
        kPassName, mib(m.total), m.stage + 1, stages.size(), mib(m.resident),
        mib(m.constants), mib(m.weights), mib(m.hessians), mib(m.workspace),
        mib(m.activations), mib(activationBudget), mib(m.intermediates));
  }
  // A batch's copy of each value whose last reader is this pass is freed as
  // soon as the batch has run, so that the pass's outputs take the place of
  // its inputs rather than add to them.
  auto releaseBatch = [&](unsigned pass, size_t b) {
    for (auto &[value, batchValues] : store)
      if (lastUse.lookup(value) == pass && b < batchValues.size())
        activations.release(batchValues[b]);
  };
  auto release = [&](unsigned pass) {
    for (auto it = store.begin(); it != store.end();) {
      auto cur = it++;
      if (lastUse.lookup(cur->first) == pass) {
        for (ActivationStore::Kept &slot : cur->second)
          activations.release(slot);
        store.erase(cur);
      }
    }
    if (format != "float")
      for (auto [layer, last] : lastWeightUse)
        if (last == pass && states[layer].result)
          states[layer].stored.reset();
    // Other constants (an embedding table) once their last stage has run:
    // their widened copies, and the archive pages that were read (a
    // gather reads rows of a large table at random).
    for (auto [op, last] : lastConstantUse) {
      if (last != pass)
        continue;
      constantArrays.erase(op);
      Operation *stored = op;
      if (auto ext = dyn_cast<arith::ExtFOp>(op))
        stored = ext.getIn().getDefiningOp();
      if (ElementsAttr attr =
              stored ? constantElements(stored) : ElementsAttr())
        if (std::optional<ArrayRef<char>> raw = rawElementData(attr))
          releaseParameterPages(*raw);
    }
    releaseFreedMemoryOverBound();
  };
  auto keep = [&](ActivationStore::Kept &slot, NpyArray array,
                  unsigned index) -> LogicalResult {
    if (llvm::Error err = activations.keep(slot, std::move(array))) {
      fail(loc) << "stage " << index + 1 << " of the model: "
                << llvm::toString(std::move(err));
      return failure();
    }
    return success();
  };

  auto calibrationStart = std::chrono::steady_clock::now();
  double doneSeconds = 0; // the time of the stages done
  for (auto [index, stagePtr] : llvm::enumerate(stages)) {
    CalibrationStage &stage = *stagePtr;
    auto start = std::chrono::steady_clock::now();
    doneSeconds = secondsSince(calibrationStart);
    // Each Hessian and its sample count, accumulated over the batches.
    std::vector<NpyArray> counts(states.size());
    for (unsigned m : stage.accumulatedFor) {
      int64_t in = states[m].layer->inFeatures;
      states[m].hessian = NpyArray::zeros(DType::F32, {in, in});
      counts[m] = NpyArray::zeros(DType::I64, {});
    }
    std::vector<std::vector<ActivationStore::Kept>> frontier(batches.size());
    // Batch b through the stage's first function (Hessians) or, with
    // `outputs`, its second, which also takes the batch's frontier.
    auto run = [&](size_t b,
                   bool outputs) -> llvm::Expected<std::vector<NpyArray>> {
      std::vector<NpyArray> args;
      for (unsigned i : outputs ? stage.outputArgs : stage.hessianArgs) {
        const StageArg &arg = stage.args[i];
        switch (arg.kind) {
        case StageArg::Input:
          args.push_back(view(batches[b]));
          break;
        case StageArg::Crossing: {
          auto loaded = activations.load(store[arg.value][b]);
          if (!loaded)
            return loaded.takeError();
          args.push_back(std::move(*loaded));
          break;
        }
        case StageArg::Constant: {
          auto it = layerOfWeight.find(arg.constant);
          if (it != layerOfWeight.end() && states[it->second].stored) {
            args.push_back(view(*states[it->second].stored));
            break;
          }
          const NpyArray *a = constantArray(arg.constant);
          if (!a)
            return llvm::createStringError(
                llvm::inconvertibleErrorCode(),
                "a constant of the model has no data (elided resources?)");
          args.push_back(view(*a));
          break;
        }
        case StageArg::Hessian:
          args.push_back(view(states[arg.layer].hessian));
          break;
        case StageArg::Count:
          args.push_back(view(counts[arg.layer]));
          break;
        }
      }
      if (!outputs)
        return stage.hessians->call(args);
      for (const ActivationStore::Kept &slot : frontier[b]) {
        auto loaded = activations.load(slot);
        if (!loaded)
          return loaded.takeError();
        args.push_back(std::move(*loaded));
      }
      return stage.propagate->call(args);
    };
    auto failBatch = [&](size_t b, llvm::Error err) {
      int64_t first = batchStart[b];
      fail(loc) << calibrationName() << ", samples [" << first
                << ", " << first + batches[b].shape[0] << "): running stage "
                << index + 1
                << " of the model: " << llvm::toString(std::move(err));
    };
    // Hessians.
    size_t unique = stage.hessianResults.size();
    for (size_t b = 0; b < batches.size(); ++b) {
      auto out = run(b, /*outputs=*/false);
      if (!out) {
        failBatch(b, out.takeError());
        return failure();
      }
      releaseBatch(2 * index, b);
      // The Hessians, their counts, the rows of each Hessian's input, the
      // frontier.
      for (auto [k, m] : llvm::enumerate(stage.accumulatedFor)) {
        states[m].hessian = std::move((*out)[k]);
        counts[m] = std::move((*out)[unique + k]);
        states[m].tokens += *(*out)[2 * unique + k].as<int64_t>();
      }
      if (stage.propagate) {
        size_t from = 3 * unique;
        frontier[b].resize(out->size() - from);
        for (size_t k = from; k < out->size(); ++k)
          if (failed(keep(frontier[b][k - from], std::move((*out)[k]), index)))
            return failure();
      }
    }
    for (unsigned m : stage.accumulatedFor)
      states[m].samples = *counts[m].as<int64_t>();
    for (auto [m, owner] : stage.sharesHessianOf) {
      states[m].hessian = states[owner].hessian;
      states[m].samples = states[owner].samples;
      states[m].tokens = states[owner].tokens;
    }
    release(2 * index);
    int64_t n = samples;
    double hessianSeconds = secondsSince(start);
    calibrateSeconds += hessianSeconds;
    hessianForwardSeconds += hessianSeconds;
    // Progress: the time so far, an estimate of what remains from the
    // stages done (their mean), and the memory held now.
    double elapsed = secondsSince(calibrationStart);
    std::string remaining;
    if (index > 0)
      remaining = ", about " +
                  formatDuration(doneSeconds / index *
                                 (stages.size() - index) -
                                 (elapsed - doneSeconds)) +
                  " left";
    log() << llvm::formatv(
        "{0}: stage {1}/{2}: Hessians of {3} layer{4} ({7} input{8}) from "
        "{5} samples, {6:F2} s; {9} elapsed{10}, {11} MiB resident\n",
        kPassName, index + 1, stages.size(), stage.layers.size(),
        stage.layers.size() == 1 ? "" : "s", n, hessianSeconds, unique,
        unique == 1 ? "" : "s", formatDuration(elapsed), remaining,
        residentBytes() >> 20);
    for (unsigned m : stage.layers) {
      if (std::optional<std::string> bad = findNonFinite(states[m].hessian)) {
        fail(states[m].layer->op->getLoc())
            << "the calibration activations that reach layer '"
            << states[m].layer->name << "' are not finite (its Hessian has "
            << *bad << "); check calibration=" << calibration
            << " and the layers before it";
        return failure();
      }
      if (failed(quantizeLayer(m, gptq, rtn)))
        return failure();
      // Only dump-hessians reads a Hessian after its layer is quantized.
      if (dumpHessians.empty())
        states[m].hessian = NpyArray();
    }
    // What the later stages read, with this stage's layers quantized.
    start = std::chrono::steady_clock::now();
    if (stage.propagate) {
      for (size_t b = 0; b < batches.size(); ++b) {
        auto out = run(b, /*outputs=*/true);
        if (!out) {
          failBatch(b, out.takeError());
          return failure();
        }
        releaseBatch(2 * index + 1, b);
        for (ActivationStore::Kept &slot : frontier[b])
          activations.release(slot);
        frontier[b].clear();
        for (auto [k, v] : llvm::enumerate(stage.outputs)) {
          std::vector<ActivationStore::Kept> &slot = store[v];
          slot.resize(batches.size());
          if (failed(keep(slot[b], std::move((*out)[k]), index)))
            return failure();
        }
      }
    }
    release(2 * index + 1);
    double propagateSeconds = secondsSince(start);
    calibrateSeconds += propagateSeconds;
    propagateForwardSeconds += propagateSeconds;
    stageSeconds.emplace_back(hessianSeconds, propagateSeconds);
  }
  activationPeakBytes = activations.peakResidentBytes();
  activationSpilledBytes = activations.spilledBytes();
  return success();
}

LogicalResult
QuantizeModelPass::record(unsigned index, LayerResult result, StringRef method,
                          LayerQuantizer &packer, double compiled,
                          std::chrono::steady_clock::time_point start) {
  LayerState &state = states[index];
  // format=packed: the codes packed by the library's gptq.pack.
  NpyArray packed, perm;
  if (format == "packed") {
    // Act-order's g_idx: the columns sorted by group, the activation
    // permuted instead, where a decode step's kernel then reads the weight
    // faster (rowsKernelReadsGroups).
    if (rowsKernelReadsGroups(bits, groupSize))
      perm = sortColumnsByGroup(result.codes, result.gIdx);
    double before = packer.compileSeconds();
    auto made = packer.pack(result.codes);
    compiled += packer.compileSeconds() - before;
    if (!made) {
      fail(state.layer->op->getLoc())
          << "layer '" << state.layer->name
          << "': " << llvm::toString(made.takeError());
      return failure();
    }
    packed = std::move(*made);
    result.codes = NpyArray();
  }
  // A quantizer's first call compiles it: that time counts as compilation.
  compileSeconds += compiled;
  quantizeSeconds += secondsSince(start) - compiled;
  state.seconds = result.seconds;
  quantizeLayerSeconds += result.seconds;
  state.method = method.str();
  // The dequantized weight is kept once, in the layout the model stores it.
  if (state.layer->transposed)
    state.stored = transposed(result.dequantized);
  else
    state.stored = std::move(result.dequantized);
  result.dequantized = NpyArray();
  if (format == "packed") {
    // To disk as they are made: a model's quantized weights need not fit
    // in memory beside its calibration.
    if (!scratch) {
      auto made = ScratchFile::create("the quantized weights");
      if (!made) {
        fail(state.layer->op->getLoc()) << llvm::toString(made.takeError());
        return failure();
      }
      scratch = std::move(*made);
    }
    uint64_t *offsets[] = {&state.spilled.qweight, &state.spilled.scales,
                           &state.spilled.zeros, &state.spilled.gIdx,
                           &state.spilled.perm};
    const NpyArray *arrays[] = {&packed, &result.scales, &result.zeros,
                                &result.gIdx, &perm};
    for (auto [offset, array] : llvm::zip_equal(offsets, arrays)) {
      auto at = scratch->append(
          ArrayRef<char>(array->data.data(), array->data.size()));
      if (!at) {
        fail(state.layer->op->getLoc())
            << "layer '" << state.layer->name
            << "': " << llvm::toString(at.takeError());
        return failure();
      }
      *offset = *at;
    }
    state.spilled.words = packed.shape[1];
    state.spilled.groups = result.scales.shape[1];
    state.spilled.sorted = perm.data.size() != 0;
    state.quantizedBytes = int64_t(packed.data.size()) +
                           int64_t(result.scales.data.size()) * 2 +
                           int64_t(result.gIdx.data.size()) +
                           int64_t(perm.data.size());
    result.scales = result.zeros = result.gIdx = NpyArray();
  }
  state.result = std::move(result);
  printLayer(index);
  // The float weight is done with: its float32 copies go, and the pages of
  // the checkpoint it was read from.
  const LinearLayer &layer = *state.layer;
  state.weight = NpyArray();
  constantArrays.erase(layer.weightSource);
  constantArrays.erase(layer.weightConstant);
  if (std::optional<ArrayRef<char>> raw = rawElementData(layer.weightAttr))
    releaseParameterPages(*raw);
  releaseFreedMemory();
  return success();
}

void QuantizeModelPass::releaseFreedMemoryOverBound() {
  uint64_t cached = runtime::allocatorStats().cachedBytes;
  if (memoryBound.total == 0 || cached > memoryBound.intermediates ||
      uint64_t(residentBytes()) + memoryBound.intermediates > memoryBound.total)
    releaseFreedMemory();
}

LogicalResult QuantizeModelPass::roundLayer(unsigned index, LayerQuantizer &rtn,
                                            StringRef method) {
  LayerState &state = states[index];
  if (failed(ensureWeight(index)))
    return failure();
  auto start = std::chrono::steady_clock::now();
  double compiled = rtn.compileSeconds();
  auto result = rtn.roundToNearest(
      state.weight, "layer '" + state.layer->name + "' weight");
  if (!result) {
    fail(state.layer->op->getLoc()) << llvm::toString(result.takeError());
    return failure();
  }
  compiled = rtn.compileSeconds() - compiled;
  if (layerErrors && state.samples > 0 &&
      failed(outputError(index, result->dequantized, state.rtnError, compiled)))
    return failure();
  return record(index, std::move(*result), method, rtn, compiled, start);
}

LogicalResult QuantizeModelPass::quantizeLayer(unsigned index,
                                               LayerQuantizer &gptq,
                                               LayerQuantizer &rtn) {
  LayerState &state = states[index];
  const LinearLayer &layer = *state.layer;
  if (state.samples <= 0) {
    emitWarning(layer.op->getLoc())
        << kPassName << ": no calibration sample reached layer '" << layer.name
        << "'; it is rounded to nearest";
    return roundLayer(index, rtn, "rtn (not calibrated)");
  }
  // An expert the router sent too few tokens: its Hessian says little (none
  // at all zeroes every input as dead), so it is rounded to nearest.
  if (state.tokens >= 0 && state.tokens < minTokens) {
    emitWarning(layer.op->getLoc())
        << kPassName << ": " << state.tokens << " calibration token"
        << (state.tokens == 1 ? "" : "s") << " reached layer '" << layer.name
        << "', fewer than min-tokens=" << int64_t(minTokens)
        << "; it is rounded to nearest";
    return roundLayer(index, rtn, "rtn (too few tokens)");
  }
  if (failed(ensureWeight(index)))
    return failure();
  auto start = std::chrono::steady_clock::now();
  double compiled = gptq.compileSeconds() + rtn.compileSeconds();
  auto warn = [&](const llvm::Twine &message) {
    emitWarning(layer.op->getLoc()) << kPassName << ": " << message.str();
  };
  // The quantizer takes its own weight and Hessian: the pass's move in
  // unless the error computation or dump-hessians reads them after.
  bool keepInputs = layerErrors;
  auto result = gptq.quantize(keepInputs ? NpyArray(state.weight)
                                         : std::move(state.weight),
                              keepInputs || !dumpHessians.empty()
                                  ? NpyArray(state.hessian)
                                  : std::move(state.hessian),
                              {"layer '" + layer.name + "' weight",
                               "the Hessian of layer '" + layer.name + "'"},
                              warn);
  if (!result) {
    fail(layer.op->getLoc()) << llvm::toString(result.takeError());
    return failure();
  }
  compiled = gptq.compileSeconds() + rtn.compileSeconds() - compiled;
  if (layerErrors) {
    if (failed(
            outputError(index, result->dequantized, state.gptqError, compiled)))
      return failure();
    // The round-to-nearest error of the same grids, for comparison.
    double rtnCompiled = rtn.compileSeconds();
    auto rounded = rtn.roundToNearest(
        state.weight, "layer '" + state.layer->name + "' weight");
    if (!rounded) {
      fail(layer.op->getLoc()) << llvm::toString(rounded.takeError());
      return failure();
    }
    compiled += rtn.compileSeconds() - rtnCompiled;
    if (failed(
            outputError(index, rounded->dequantized, state.rtnError, compiled)))
      return failure();
  }
  return record(index, std::move(*result), "gptq", gptq, compiled, start);
}

LogicalResult QuantizeModelPass::outputError(unsigned index,
                                             const NpyArray &quantized,
                                             double &error, double &compiled) {
  LayerState &state = states[index];
  double before = outputErrors->compileSeconds();
  auto computed = outputErrors->compute(state.weight, quantized, state.hessian);
  compiled += outputErrors->compileSeconds() - before;
  if (!computed) {
    fail(state.layer->op->getLoc())
        << "layer '" << state.layer->name
        << "': output error: " << llvm::toString(computed.takeError());
    return failure();
  }
  error = *computed;
  return success();
}

void QuantizeModelPass::printLayer(unsigned index) {
  const LayerState &state = states[index];
  const LinearLayer &layer = *state.layer;
  size_t done = 0;
  for (const LayerState &s : states)
    done += s.result.has_value();
  std::string line =
      llvm::formatv("{0}: [{1}/{2}] {3} {4} x {5}: {6}", kPassName, done,
                    states.size(), layer.name, layer.outFeatures,
                    layer.inFeatures, state.method)
          .str();
  if (!std::isnan(state.gptqError))
    line += ", error " + formatNumber(state.gptqError);
  if (!std::isnan(state.rtnError))
    line += std::string(state.method == "gptq" ? " (rtn " : ", error ") +
            formatNumber(state.rtnError) + (state.method == "gptq" ? ")" : "");
  if (state.method == "gptq")
    line += ", percdamp " + formatNumber(state.result->percdampUsed);
  if (state.samples > 0 && state.tokens >= 0)
    line += llvm::formatv(", {0} token{1}", state.tokens,
                          state.tokens == 1 ? "" : "s")
                .str();
  log() << line << llvm::formatv(", {0:F3} s\n", state.seconds);
}

//===----------------------------------------------------------------------===//
// Rewrite
//===----------------------------------------------------------------------===//

LogicalResult QuantizeModelPass::rewrite(ConfigAttr config) {
  if (scratch) {
    auto mapped = scratch->map();
    if (!mapped) {
      fail(module.getLoc()) << llvm::toString(mapped.takeError());
      return failure();
    }
    spilledData = *mapped;
  }
  WeightForm form = format == "float"   ? WeightForm::Float
                    : format == "quant" ? WeightForm::Quant
                                        : WeightForm::Packed;
  std::vector<AppliedWeight> weights;
  for (LayerState &state : states) {
    if (!state.result)
      continue;
    const LinearLayer &layer = *state.layer;
    const LayerResult &r = *state.result;
    AppliedWeight w;
    w.layer = &layer;
    if (form == WeightForm::Float) {
      w.dequantized =
          ArrayRef<char>(state.stored->data.data(), state.stored->data.size());
    } else if (form == WeightForm::Quant) {
      QuantizedWeight &q = w.quantized;
      q.rows = layer.outFeatures;
      q.cols = layer.inFeatures;
      q.groups = r.scales.shape[1];
      q.bits = config.getBits();
      q.codes = ArrayRef(r.codes.as<uint8_t>(), q.rows * q.cols);
      q.scales = ArrayRef(r.scales.as<float>(), q.rows * q.groups);
      q.zeros = ArrayRef(r.zeros.as<float>(), q.rows * q.groups);
      q.gIdx = ArrayRef(r.gIdx.as<int32_t>(), q.cols);
    } else {
      // The blobs read the scratch file's mapping in place.
      auto at = [&](uint64_t offset, int64_t words) {
        return ArrayRef<char>(spilledData->data() + offset, size_t(words) * 4);
      };
      w.words = state.spilled.words;
      w.groups = state.spilled.groups;
      w.qweight = at(state.spilled.qweight, layer.outFeatures * w.words);
      w.scales = at(state.spilled.scales, layer.outFeatures * w.groups);
      w.zeros = at(state.spilled.zeros, layer.outFeatures * w.groups);
      w.gIdx = at(state.spilled.gIdx, layer.inFeatures);
      if (state.spilled.sorted)
        w.perm = at(state.spilled.perm, layer.inFeatures * 2);
    }
    weights.push_back(w);
  }
  return applyQuantizedWeights(module, weights, form, config.getBits(),
                               spilledData);
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

void QuantizeModelPass::runOnOperation() {
  // Uncommitted files of a failed run are discarded.
  llvm::scope_exit releaseFiles([&] { ownFiles.reset(); });
  module = getOperation();
  Location loc = module.getLoc();
  states.clear();
  scratch.reset();
  spilledData.reset();
  layerOfWeight.clear();
  stages.clear();
  stageFunctions.clear();
  jitContexts.clear();
  constantArrays.clear();
  compiledCount = 0;
  calibrateSeconds = compileSeconds = quantizeSeconds = 0;
  hessianForwardSeconds = propagateForwardSeconds = quantizeLayerSeconds = 0;
  stageSeconds.clear();
  auto totalStart = std::chrono::steady_clock::now();

  // Options.
  if (method != "gptq" && method != "rtn") {
    fail(loc) << "method='" << method << "': expected gptq or rtn";
    return;
  }
  if (sequential != "layers" && sequential != "blocks" &&
      sequential != "none") {
    fail(loc) << "sequential='" << sequential
              << "': expected layers, blocks or none";
    return;
  }
  if (std::optional<ExpertCalibration> experts =
          parseExpertCalibration(moeCalibration)) {
    expertCalibration = *experts;
  } else {
    fail(loc) << "moe-calibration='" << moeCalibration
              << "': expected routed or all";
    return;
  }
  if (std::optional<uint64_t> budget = parseByteCount(hessianMemory)) {
    hessianBudget = *budget;
  } else {
    fail(loc) << "hessian-memory='" << hessianMemory
              << "': expected bytes (with K, M, G or T) or a percentage of "
                 "physical memory";
    return;
  }
  if (minTokens < 0) {
    fail(loc) << "min-tokens=" << int64_t(minTokens) << ": expected 0 or more";
    return;
  }
  if (format != "packed" && format != "float" && format != "quant") {
    fail(loc) << "format='" << format << "': expected packed, float or quant";
    return;
  }
  if (calibrationBatch < 1) {
    fail(loc) << "calibration-batch=" << int64_t(calibrationBatch)
              << ": expected at least 1";
    return;
  }
  if (std::optional<uint64_t> budget = parseByteCount(activationMemory)) {
    activationBudget = *budget;
  } else {
    fail(loc) << "activation-memory='" << activationMemory
              << "': expected bytes (a number with K, M, G or T) or a "
                 "percentage of physical memory (25%)";
    return;
  }
  activationPeakBytes = activationSpilledBytes = 0;
  memoryBound = MemoryBound();
  std::string configError;
  ConfigAttr config;
  rtnConfig = {};
  {
    ScopedDiagnosticHandler handler(&getContext(), [&](Diagnostic &d) {
      configError = d.str();
      return success();
    });
    ConfigAttr defaults = ConfigAttr::getDefault(&getContext());
    auto make = [&](bool act, bool stat) {
      return ConfigAttr::getChecked(
          [&] { return emitError(loc); }, &getContext(), int64_t(bits),
          int64_t(groupSize), bool(sym), act, stat,
          llvm::APFloat(double(percdamp)), int64_t(blockSize), bool(mse),
          defaults.getMseNorm(), defaults.getMseGrid(),
          defaults.getMseMaxShrink());
    };
    config = make(actOrder, staticGroups);
    if (config)
      rtnConfig = make(false, false);
  }
  if (!config) {
    fail(loc) << "invalid quantization options: " << configError;
    return;
  }
  LayerQuantizerOptions quantizerOptions;
  quantizerOptions.dampStep = dampStep;
  quantizerOptions.maxAttempts = maxAttempts;
  quantizerOptions.dampStepName = "damp-step";
  quantizerOptions.maxAttemptsName = "max-attempts";
  jitOptions.cacheDir = compileCache.empty()  ? defaultCacheDir()
                        : compileCache == "off" ? std::string()
                                                : std::string(compileCache);
  jitOptions.toolName = "gptq-opt";
  quantizerOptions.jit = jitOptions;
  auto gptqQuantizer = LayerQuantizer::create(config, quantizerOptions);
  if (!gptqQuantizer) {
    fail(loc) << llvm::toString(gptqQuantizer.takeError());
    return;
  }
  outputErrors = std::make_shared<OutputError>(jitOptions);
  auto rtnQuantizer = LayerQuantizer::create(rtnConfig, quantizerOptions);
  if (!rtnQuantizer) {
    fail(loc) << llvm::toString(rtnQuantizer.takeError());
    return;
  }

  // The entry and its layers.
  FailureOr<func::FuncOp> entryFunc =
      findEntryFunction(module, entry, [&](Location at) { return fail(at); });
  if (failed(entryFunc))
    return;
  func = *entryFunc;
  auto filter = LayerNameFilter::create(include, exclude);
  if (!filter) {
    fail(loc) << llvm::toString(filter.takeError());
    return;
  }
  if (method == "gptq" && !hasCalibration() && hessians.empty()) {
    fail(loc) << "method=gptq needs calibration=FILE.npy (calibration "
                 "samples) or hessians=FILE.npz (Hessians by layer name); "
                 "method=rtn needs neither";
    return;
  }
  if (hasCalibration() && !hessians.empty()) {
    fail(loc) << "calibration= and hessians= both given; the Hessians come "
                 "from one of them";
    return;
  }
  if (method == "rtn" &&
      (hasCalibration() || !hessians.empty() || !dumpHessians.empty())) {
    fail(loc) << "method=rtn uses no calibration: drop calibration=, "
                 "hessians= and dump-hessians=";
    return;
  }
  if (!dumpStages.empty() && !hasCalibration()) {
    fail(loc) << "dump-stages= writes the functions that calibration runs; "
                 "give calibration= too";
    return;
  }
  // Output files are checked now, not after the work: their folder must
  // exist, and none may be an input of the run or another of its outputs
  // (in gptq-opt, the tool's RunFiles knows the module, its parameter
  // archive and -o too; the files are committed with -o, after the last
  // pass).
  if (!RunFiles::current())
    ownFiles = std::make_shared<RunFiles>();
  RunFiles &files = *RunFiles::current();
  for (auto [option, path] :
       {std::pair<StringRef, std::string>("calibration=", calibration),
        std::pair<StringRef, std::string>("hessians=", hessians)}) {
    if (path.empty())
      continue;
    if (llvm::Error err = files.addInput(path, option)) {
      fail(loc) << llvm::toString(std::move(err));
      return;
    }
  }
  for (auto [option, path] :
       {std::pair<StringRef, std::string>("report=", report),
        std::pair<StringRef, std::string>("dump-hessians=", dumpHessians),
        std::pair<StringRef, std::string>("dump-stages=", dumpStages)}) {
    if (path.empty())
      continue;
    StringRef parent = llvm::sys::path::parent_path(path);
    if (!parent.empty() && !llvm::sys::fs::is_directory(parent)) {
      fail(loc) << option << path << ": no directory '" << parent
                << "' to write it in";
      return;
    }
    if (llvm::sys::fs::is_directory(path)) {
      fail(loc) << option << path << ": is a directory, expected a "
                << "file name";
      return;
    }
    if (llvm::Error err = files.addOutput(path, option)) {
      fail(loc) << llvm::toString(std::move(err));
      return;
    }
  }
  // Weights that are arguments: constants of the archive's values for the
  // pass, the arguments put back (unread) after the rewrite.
  std::optional<BoundArguments> boundArguments;
  if (!parameters.empty()) {
    if (llvm::Error err = files.addInput(parameters, "parameters=")) {
      fail(loc) << llvm::toString(std::move(err));
      return;
    }
    FailureOr<BoundArguments> bound = bindArgumentParameters(
        func, parameters, [&](Location at) { return fail(at); });
    if (failed(bound))
      return;
    boundArguments = std::move(*bound);
    log() << kPassName << ": parameters=" << parameters << " binds "
          << boundArguments->arguments.size() << " of the arguments of '@"
          << func.getSymName() << "'\n";
  }
  LinearLayers linears(module);
  size_t found = 0;
  for (const LinearLayer *layer : selectQuantizedLayers(
           linears, func, *filter, classifier, routers, found)) {
    LayerState state;
    state.layer = layer;
    states.push_back(std::move(state));
  }
  if (states.empty()) {
    if (found)
      fail(func.getLoc()) << "none of the " << found << " linear layers of '@"
                          << func.getSymName() << "' is selected (include='"
                          << include << "', exclude='" << exclude
                          << "', classifier=" << (classifier ? "true" : "false")
                          << ", routers=" << (routers ? "true" : "false")
                          << ")";
    else
      fail(func.getLoc()) << "no linear layer in '@" << func.getSymName()
                          << "': no linalg contraction of an activation with "
                             "a constant 2-D float weight";
    return;
  }

  // Weights, as float32 out x in.
  for (auto [i, state] : llvm::enumerate(states)) {
    const LinearLayer &layer = *state.layer;
    auto type = cast<ShapedType>(layer.weightAttr.getType());
    Type element = type.getElementType();
    bool widening = layer.weightSource != layer.weightConstant;
    auto sourceType = cast<ShapedType>(layer.weightSource->getResultTypes()[0]);
    if (!sourceType.getElementType().isF32() ||
        !(element.isF32() || element.isF16() || element.isBF16())) {
      InFlightDiagnostic d = fail(layer.op->getLoc());
      d << "layer '" << layer.name << "' has a weight of " << element;
      if (widening)
        d << " widened to " << sourceType.getElementType();
      d << "; only f32 weights, and bf16 or f16 weights widened to f32 by "
           "an arith.extf, are quantized";
      return;
    }
    std::optional<NpyArray> w = arrayOf(layer.weightAttr);
    if (!w) {
      fail(layer.weightSource->getLoc())
          << "layer '" << layer.name
          << "': its weight has no data (a dense_resource whose blob is "
             "missing or elided)";
      return;
    }
    // The float32 copy is made when the layer is quantized (ensureWeight).
    state.weightBytes = layer.outFeatures * layer.inFeatures * 4;
    // A tied weight gets its own copy, so that the other users keep the
    // float values.
    if (layer.sharedWeight)
      untieWeight(const_cast<LinearLayer &>(layer));
    layerOfWeight[layer.weightSource] = i;
    if (method == "gptq" && hasCalibration())
      state.uncalibrated = uncalibratedReason(func, layer);
  }

  log() << kPassName << ": quantizing " << states.size() << " linear layer"
        << (states.size() == 1 ? "" : "s") << " of '@" << func.getSymName()
        << "' with " << method << ", " << config << "\n";

  if (method == "rtn") {
    for (unsigned i = 0; i < states.size(); ++i)
      if (failed(roundLayer(i, **rtnQuantizer, "rtn")))
        return;
  } else if (!hessians.empty()) {
    auto entries = readNpz(hessians);
    if (!entries) {
      fail(loc) << "hessians=" << hessians << ": "
                << llvm::toString(entries.takeError());
      return;
    }
    for (auto [i, state] : llvm::enumerate(states)) {
      const std::string &name = state.layer->name;
      auto it = llvm::find_if(
          *entries, [&](const NpzEntry &e) { return e.name == name; });
      if (it == entries->end()) {
        fail(state.layer->op->getLoc())
            << "hessians=" << hessians << " has no Hessian for layer '" << name
            << "'";
        return;
      }
      int64_t in = state.layer->inFeatures;
      if (it->array.dtype != DType::F32 ||
          it->array.shape != std::vector<int64_t>{in, in}) {
        fail(state.layer->op->getLoc())
            << "hessians=" << hessians << ": '" << name << "' is "
            << it->array.describe() << ", expected float32 [" << in << ", "
            << in << "]";
        return;
      }
      state.hessian = std::move(it->array);
      state.samples = 1;
      state.tokens = -1;
    }
    // Every Hessian is checked before any layer is quantized.
    for (unsigned i = 0; i < states.size(); ++i)
      if (failed(quantizeLayer(i, **gptqQuantizer, **rtnQuantizer)))
        return;
  } else {
    for (const LayerState &state : states)
      if (!state.uncalibrated.empty())
        emitWarning(state.layer->op->getLoc())
            << kPassName << ": calibration cannot reach layer '"
            << state.layer->name << "' (" << state.uncalibrated
            << "); it is rounded to nearest";
    if (llvm::none_of(states, [](const LayerState &s) {
          return s.uncalibrated.empty();
        })) {
      fail(func.getLoc()) << "calibration reaches none of the selected "
                             "layers";
      return;
    }
    // Layers that calibration cannot reach are rounded first, so that the
    // layers calibrated after them see their quantized outputs.
    for (unsigned i = 0; i < states.size(); ++i)
      if (!states[i].uncalibrated.empty() &&
          failed(roundLayer(i, **rtnQuantizer, "rtn (not calibrated)")))
        return;
    if (failed(calibrate(**gptqQuantizer, **rtnQuantizer)))
      return;
  }

  // Weight bytes before and after.
  int64_t floatBytes = 0, quantBytes = 0;
  for (const LayerState &state : states) {
    floatBytes += state.weightBytes;
    const LayerResult &r = *state.result;
    if (format == "float")
      quantBytes += state.weightBytes;
    else if (format == "quant")
      // A byte per code, a float32 scale and a byte of zero point per grid,
      // and at most an int32 place per column (act-order's gather).
      quantBytes += int64_t(r.codes.data.size()) +
                    int64_t(r.scales.data.size()) * 5 / 4 +
                    int64_t(r.gIdx.data.size());
    else
      quantBytes += state.quantizedBytes;
  }

  // The rewrite fails only for a weight that format=quant cannot express
  // (GPTQ's grids always fit); it runs before the outputs are written, so
  // that the report has its time. When writing them fails, the pass fails and
  // the rewritten module is not written either.
  auto rewriteStart = std::chrono::steady_clock::now();
  if (failed(rewrite(config))) {
    signalPassFailure();
    return;
  }
  if (boundArguments && failed(restoreBoundArguments(func, *boundArguments))) {
    fail(func.getLoc()) << "cannot put the arguments parameters= bound back";
    return;
  }
  double rewriteSeconds = secondsSince(rewriteStart);

  // Outputs: the report and the Hessians, together, and with the tool's
  // own outputs when a tool runs the pass.
  PendingOutputs &outputs = RunFiles::current()->outputs();
  // The report: what report= writes as JSON and a pipeline gets as a
  // struct (io.report), made once.
  QuantizeModelReport summary;
  summary.entry = func.getSymName().str();
  for (const LayerState &state : states) {
    const LinearLayer &layer = *state.layer;
    const LayerResult &r = *state.result;
    QuantizedLayerReport &l = summary.layers.emplace_back();
    l.name = layer.name;
    l.out = layer.outFeatures;
    l.in = layer.inFeatures;
    l.block = layer.block;
    if (state.stage >= 0)
      l.stage = state.stage;
    l.samples = hessians.empty() ? state.samples : 0;
    l.tokens = hessians.empty() ? state.tokens : 0;
    l.expert = layer.expert;
    l.method = state.method;
    l.seconds = state.seconds;
    if (!std::isnan(state.gptqError))
      l.error = state.gptqError;
    if (!std::isnan(state.rtnError))
      l.rtnError = state.rtnError;
    if (state.method == "gptq") {
      l.loss = r.loss;
      l.percdamp = r.percdampUsed;
      l.attempts = r.attempts;
      if (r.attempts > 1)
        summary.escalated.push_back(layer.name + " (percdamp " +
                                    formatNumber(r.percdampUsed) + ")");
    } else if (method == "gptq") {
      summary.roundedToNearest.push_back(layer.name);
    }
  }
  const std::vector<std::string> &escalated = summary.escalated;
  const std::vector<std::string> &fallbacks = summary.roundedToNearest;
  llvm::json::Array layersJson;
  for (const QuantizedLayerReport &l : summary.layers) {
    llvm::json::Object o{
        {"name", l.name}, {"out", l.out},         {"in", l.in},
        {"method", l.method}, {"seconds", l.seconds},
    };
    if (l.expert)
      o["expert"] = true;
    if (l.block)
      o["block"] = *l.block;
    if (l.stage)
      o["stage"] = *l.stage;
    if (l.samples > 0) {
      o["samples"] = l.samples;
      o["tokens"] = l.tokens;
    }
    if (l.error)
      o["error"] = *l.error;
    if (l.rtnError)
      o["rtn_error"] = *l.rtnError;
    if (l.loss) {
      o["loss"] = *l.loss;
      o["percdamp"] = *l.percdamp;
      o["attempts"] = *l.attempts;
    }
    layersJson.push_back(std::move(o));
  }
  double total = secondsSince(totalStart);
  if (!report.empty()) {
    llvm::json::Object config_json{
        {"bits", int64_t(bits)},
        {"group_size", int64_t(groupSize)},
        {"sym", bool(sym)},
        {"act_order", bool(actOrder)},
        {"static_groups", bool(staticGroups)},
        {"percdamp", double(percdamp)},
        {"block_size", int64_t(blockSize)},
        {"mse", bool(mse)},
        {"method", std::string(method)},
        {"sequential", std::string(sequential)},
    };
    llvm::json::Array stagesJson;
    for (auto [index, seconds] : llvm::enumerate(stageSeconds)) {
      llvm::json::Array names;
      for (unsigned m : stages[index]->layers)
        names.push_back(states[m].layer->name);
      stagesJson.push_back(llvm::json::Object{
          {"layers", std::move(names)},
          {"hessian_forward_seconds", seconds.first},
          {"propagation_forward_seconds", seconds.second}});
    }
    llvm::json::Object doc{
        {"entry", func.getSymName().str()},
        {"stages", std::move(stagesJson)},
        {"config", std::move(config_json)},
        {"layers", std::move(layersJson)},
        {"escalated", llvm::json::Array(escalated)},
        {"rounded_to_nearest", llvm::json::Array(fallbacks)},
        {"weight_bytes", floatBytes},
        {"quantized_weight_bytes", quantBytes},
        {"seconds", llvm::json::Object{{"total", total},
                                       {"calibration", calibrateSeconds},
                                       {"compile", compileSeconds},
                                       {"quantize", quantizeSeconds}}},
        {"timing",
         llvm::json::Object{
             {"total_seconds", total},
             {"calibration_forward_seconds", hessianForwardSeconds},
             {"propagation_forward_seconds", propagateForwardSeconds},
             {"quantize_seconds", quantizeSeconds},
             {"quantize_layer_seconds", quantizeLayerSeconds},
             {"rewrite_seconds", rewriteSeconds},
             {"compile_seconds", compileSeconds}}},
        {"peak_rss_bytes", peakResidentBytes()},
        {"memory",
         llvm::json::Object{
             {"bound_bytes", int64_t(memoryBound.total)},
             {"bound_stage", int64_t(memoryBound.stage) + 1},
             {"resident_bytes", int64_t(memoryBound.resident)},
             {"constant_bytes", int64_t(memoryBound.constants)},
             {"weight_bytes", int64_t(memoryBound.weights)},
             {"hessian_bytes", int64_t(memoryBound.hessians)},
             {"workspace_bytes", int64_t(memoryBound.workspace)},
             {"activation_bytes", int64_t(memoryBound.activations)},
             {"intermediate_bytes", int64_t(memoryBound.intermediates)},
             {"activation_memory_bytes", int64_t(activationBudget)},
             {"activation_peak_bytes", int64_t(activationPeakBytes)},
             {"activation_spilled_bytes", int64_t(activationSpilledBytes)},
         }},
    };
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(doc))) << "\n";
    if (llvm::Error err = outputs.add(report, text)) {
      fail(loc) << "report=" << report << ": "
                << llvm::toString(std::move(err));
      return;
    }
  }
  if (!dumpHessians.empty()) {
    std::vector<NpzEntryRef> entries;
    for (LayerState &state : states)
      if (state.samples > 0)
        entries.push_back({state.layer->name, &state.hessian});
    if (llvm::Error err = writeNpz(outputs, dumpHessians, entries)) {
      fail(loc) << "dump-hessians=" << dumpHessians << ": "
                << llvm::toString(std::move(err));
      return;
    }
  }
  if (!dumpStages.empty()) {
    // One module of named modules, so that aliases and resources are
    // printed once.
    OwningOpRef<ModuleOp> all = ModuleOp::create(func.getLoc());
    appendStageModules(*all, stages);
    std::string text;
    llvm::raw_string_ostream os(text);
    all->print(os);
    if (llvm::Error err = outputs.add(dumpStages, text)) {
      fail(loc) << "dump-stages=" << dumpStages << ": "
                << llvm::toString(std::move(err));
      return;
    }
  }
  if (ownFiles) {
    llvm::Error err = ownFiles->commit();
    ownFiles.reset();
    if (err) {
      fail(loc) << llvm::toString(std::move(err));
      return;
    }
  }
  if (io.report) {
    summary.weightBytes = floatBytes;
    summary.quantizedWeightBytes = quantBytes;
    summary.totalSeconds = total;
    summary.calibrationSeconds = calibrateSeconds;
    summary.compileSeconds = compileSeconds;
    summary.quantizeSeconds = quantizeSeconds;
    summary.peakResidentBytes = peakResidentBytes();
    summary.memoryBoundBytes = int64_t(memoryBound.total);
    *io.report = summary;
  }

  log() << kPassName << ": " << states.size()
        << (states.size() == 1 ? " layer in " : " layers in ")
        << llvm::formatv("{0:F1}", total) << " s (calibration "
        << llvm::formatv("{0:F1}", calibrateSeconds) << " s, compile "
        << llvm::formatv("{0:F1}", compileSeconds) << " s, quantize "
        << llvm::formatv("{0:F1}", quantizeSeconds) << " s); weights "
        << floatBytes << " -> " << quantBytes << " bytes ("
        << llvm::formatv("{0:F2}",
                         double(floatBytes) / std::max<int64_t>(quantBytes, 1))
        << "x smaller); peak resident memory "
        << llvm::formatv("{0:F0}", peakResidentBytes() / 1048576.0) << " MiB";
  if (memoryBound.total)
    log() << llvm::formatv(" (bound {0:F0} MiB)",
                                  memoryBound.total / 1048576.0);
  if (activationSpilledBytes)
    log() << llvm::formatv(
        "; {0:F0} MiB of activations went to disk (activation-memory={1})",
        activationSpilledBytes / 1048576.0, activationMemory);
  log() << "\n";
  if (!escalated.empty()) {
    log() << kPassName << ": " << escalated.size()
                 << " layer(s) needed more dampening:";
    for (const std::string &s : escalated)
      log() << " " << s;
    log() << "\n";
  }
  if (!fallbacks.empty()) {
    log() << kPassName << ": " << fallbacks.size()
          << " layer(s) rounded to nearest (calibration did not "
             "reach them, or fewer than min-tokens="
          << int64_t(minTokens) << " tokens did):";
    for (const std::string &s : fallbacks)
      log() << " " << s;
    log() << "\n";
  }
  // How evenly the routers spread the calibration tokens over the experts.
  std::vector<const LayerState *> experts;
  for (const LayerState &state : states)
    if (state.layer->expert && state.samples > 0 && state.tokens >= 0)
      experts.push_back(&state);
  if (!experts.empty()) {
    llvm::stable_sort(experts, [](const LayerState *a, const LayerState *b) {
      return a->tokens < b->tokens;
    });
    size_t few = llvm::count_if(experts, [](const LayerState *state) {
      return state->method == "rtn (too few tokens)";
    });
    log() << llvm::formatv(
        "{0}: {1} expert layer(s), calibrated on {2}: tokens min {3} ({4}), "
        "median {5}, max {6} ({7}); {8} rounded to nearest (min-tokens={9})\n",
        kPassName, experts.size(),
        expertCalibration == ExpertCalibration::All
            ? "all the rows of their dispatch (moe-calibration=all)"
            : "the tokens routed to each",
        experts.front()->tokens, experts.front()->layer->name,
        experts[experts.size() / 2]->tokens, experts.back()->tokens,
        experts.back()->layer->name, few, int64_t(minTokens));
  }
}

std::unique_ptr<Pass>
mlir::gptq::createQuantizeModelPass(const GPTQQuantizeModelOptions &options,
                                    QuantizeModelIO io) {
  return std::make_unique<QuantizeModelPass>(options, std::move(io));
}
