//===- Calibration.cpp - Calibration stage by stage -----------------------===//
//
// As the reference's Llama driver does: the entry function is cut into
// stages, one per group of layers calibrated together. Each stage becomes
// two compiled functions (weights and other large constants are
// arguments): the first runs on the calibration samples batch by batch to
// accumulate its layers' Hessians and keeps what the layers read; its
// layers are quantized; the second computes, from what was kept and the
// quantized weights, what the next stages read.
//
//===----------------------------------------------------------------------===//

#include "ModelQuantizer.h"

#include "gptq/Driver/MemoryEstimate.h"
#include "gptq/Execution/CompileJobs.h"
#include "gptq/Quantize/EntryFunction.h"
#include "gptq/Runtime/Allocator.h"
#include "gptq/Support/MappedPages.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Threading.h"

#include <map>

using namespace mlir;
using namespace mlir::gptq;
using namespace mlir::gptq::driver;

//===----------------------------------------------------------------------===//
// The samples
//===----------------------------------------------------------------------===//

llvm::Expected<NpyArray> ModelQuantizer::calibrationSamples() const {
  if (!io.calibration)
    return readNpy(options.calibration);
  const NpyView &given = *io.calibration;
  std::optional<int64_t> bytes =
      checkedByteCount(given.shape, dtypeSize(given.dtype));
  if (!bytes || uint64_t(*bytes) != given.data.size())
    return llvm::createStringError(
        "the calibration samples' shape " + given.describe() + " takes " +
        (bytes ? std::to_string(*bytes) : std::string("too many")) +
        " bytes, the buffer given holds " + std::to_string(given.data.size()));
  return NpyArray::borrowing(given.dtype, given.shape,
                             llvm::arrayRefFromStringRef<char>(given.data));
}

/// The calibration samples hold the entry's (only) argument, sample by
/// sample along dimension 0.
LogicalResult ModelQuantizer::checkSamples(const NpyArray &data) {
  Location loc = module.getLoc();
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
      data.dtype == *want && int64_t(data.shape.size()) == argType.getRank();
  for (int64_t d = 1; shapeOk && d < argType.getRank(); ++d)
    shapeOk = argType.isDynamicDim(d) || argType.getDimSize(d) == data.shape[d];
  if (!shapeOk || data.shape.empty() || data.shape[0] == 0) {
    fail(loc) << calibrationName() << ": found " << data.describe()
              << ", expected " << dtypeName(*want) << " samples of '@"
              << func.getSymName() << "''s argument " << type.getInput(0)
              << " along dimension 0 (at least one sample)";
    return failure();
  }
  // Samples of no elements (windows of zero tokens) reach every layer with
  // nothing: a zero Hessian, which would quantize every weight to zero.
  for (size_t d = 1; d < data.shape.size(); ++d)
    if (data.shape[d] == 0) {
      fail(loc) << calibrationName() << ": found " << data.describe()
                << ": its samples are empty (dimension " << d
                << " is 0); each sample needs at least one element";
      return failure();
    }
  int64_t batch = argType.getDimSize(0);
  if (!argType.isDynamicDim(0) && batch != options.calibrationBatch) {
    fail(func.getLoc()) << "'@" << func.getSymName()
                        << "' takes a static batch of " << batch
                        << "; set calibration-batch=" << batch;
    return failure();
  }
  // A static batch takes whole batches only: samples left over would be
  // calibrated on by no one, while the report counted them.
  if (!argType.isDynamicDim(0) && data.shape[0] % batch) {
    fail(loc) << calibrationName() << ": " << data.shape[0]
              << " samples do not fill '@" << func.getSymName()
              << "''s static batches of " << batch << " ("
              << data.shape[0] % batch
              << " would be left out): give a multiple of " << batch
              << " samples, or a function of a dynamic batch";
    return failure();
  }
  return success();
}

/// Token ids against the vocabulary (vocab=, else the importers' gptq.model)
/// and the model's context: before anything runs.
LogicalResult ModelQuantizer::checkTokenIds(const NpyArray &data) {
  Location loc = module.getLoc();
  auto model = module->getAttrOfType<DictionaryAttr>("gptq.model");
  if (options.vocab < 0) {
    fail(loc) << "vocab=" << options.vocab
              << ": expected a positive vocabulary size (0: the module's)";
    return failure();
  }
  if ((!model && options.vocab == 0) ||
      (data.dtype != DType::I32 && data.dtype != DType::I64))
    return success();
  int64_t bound = options.vocab;
  std::string range = "the range [0, vocab = " + std::to_string(bound) + ")";
  if (bound == 0)
    if (auto size = model.getAs<IntegerAttr>("vocab_size")) {
      bound = size.getInt();
      range =
          "the model's range [0, vocab_size = " + std::to_string(bound) + ")";
    }
  auto seqLen = model ? model.getAs<IntegerAttr>("seq_len") : IntegerAttr();
  if (seqLen && data.shape.size() == 2 && data.shape[1] > seqLen.getInt()) {
    fail(loc) << calibrationName() << ": windows of " << data.shape[1]
              << " tokens are longer than the model's "
              << "seq_len = " << seqLen.getInt();
    return failure();
  }
  int64_t cols = data.shape.size() >= 2 ? data.shape.back() : 1;
  for (int64_t i = 0, n = data.numElements(); bound > 0 && i < n; ++i) {
    int64_t id = data.dtype == DType::I32 ? data.as<int32_t>()[i]
                                          : data.as<int64_t>()[i];
    if (id >= 0 && id < bound)
      continue;
    fail(loc) << calibrationName() << ": token id " << id << " at [" << i / cols
              << ", " << i % cols << "] is out of " << range;
    return failure();
  }
  return success();
}

FailureOr<Batches> ModelQuantizer::readBatches() {
  auto data = calibrationSamples();
  if (!data) {
    fail(module.getLoc()) << calibrationName() << ": "
                          << llvm::toString(data.takeError());
    return failure();
  }
  if (failed(checkSamples(*data)) || failed(checkTokenIds(*data)))
    return failure();
  Batches b;
  b.samples = std::move(*data);
  int64_t samples = b.samples.shape[0];
  int64_t rowBytes = b.samples.data.size() / samples;
  for (int64_t s = 0; s < samples; s += options.calibrationBatch) {
    int64_t n = std::min<int64_t>(options.calibrationBatch, samples - s);
    std::vector<int64_t> shape = b.samples.shape;
    shape[0] = n;
    b.batches.push_back(NpyArray::borrowing(
        b.samples.dtype, std::move(shape),
        llvm::ArrayRef(b.samples.data.data() + s * rowBytes, n * rowBytes)));
    b.start.push_back(s);
  }
  return b;
}

//===----------------------------------------------------------------------===//
// The stages
//===----------------------------------------------------------------------===//

LogicalResult ModelQuantizer::cutStages() {
  std::vector<const LinearLayer *> layers;
  SmallVector<bool> calibrated;
  for (const LayerState &state : states) {
    layers.push_back(state.layer);
    calibrated.push_back(state.uncalibrated.empty());
  }
  StageCutOptions cut;
  cut.sequential = options.sequential;
  cut.experts = options.experts;
  cut.hessianBudget = options.hessianMemory;
  FailureOr<CalibrationStages> made = cutCalibrationStages(
      module, func, layers, calibrated, layerOfWeight, cut, kPassName);
  if (failed(made))
    return failure();
  stages = std::move(made->stages);
  for (auto [state, stage] : llvm::zip_equal(states, made->stageOf))
    state.stage = stage;
  return success();
}

/// Compiles the stages and what quantizing calls, side by side
/// (runCompileJobs).
LogicalResult ModelQuantizer::compileAhead() {
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
    jobOfStage.emplace_back(textJob(*stage->hessianModule),
                            stage->outputModule ? textJob(*stage->outputModule)
                                                : ~0u);
  // The stage functions in one module per thread (a module of its own
  // each would pay each time for what a module costs whatever its size),
  // then the quantizer's code, the packing's and the output errors' too,
  // which the first layer would otherwise compile after the first stage.
  unsigned threads = llvm::hardware_concurrency().compute_thread_count();
  std::vector<CompileJob> jobs = groupedCompileJobs(
      texts, "calibration-stage", "stage", jitOptions, threads, stageFunctions);
  jobs.push_back([&](MLIRContext &) {
    return gptq->prepare(/*packing=*/options.format == WeightForm::Packed);
  });
  if (options.layerErrors)
    jobs.push_back([&](MLIRContext &) { return outputErrors->prepare(); });

  auto start = Clock::now();
  llvm::Error err = runCompileJobs(jobs, jitContexts);
  times.compile += secondsSince(start);
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

/// The last pass (2 x stage, + 1 for the outputs) that reads each value
/// that crosses between stages, and each layer's weight: both are freed
/// after it (the quantized weights are kept when the rewrite writes them).
void ModelQuantizer::planLastUses() {
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
}

void ModelQuantizer::logMemoryBound() {
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
      mib(m.activations), mib(options.activationMemory), mib(m.intermediates));
}

LogicalResult ModelQuantizer::calibrate() {
  FailureOr<Batches> batches = readBatches();
  if (failed(batches) || failed(cutStages()) || failed(compileAhead()))
    return failure();
  int64_t samples = batches->samples.shape[0];
  log() << kPassName << ": calibrating on " << samples << " samples in "
        << batches->batches.size() << " batches, " << stages.size() << " stage"
        << (stages.size() == 1 ? "" : "s") << " (" << compiledCount
        << " function" << (compiledCount == 1 ? "" : "s") << " compiled)\n";
  planLastUses();
  activations.emplace(options.activationMemory);
  // Other dynamic dimensions than the batch are those of the samples (the
  // length of a token window).
  int64_t extent = 1;
  for (int64_t d : ArrayRef<int64_t>(batches->samples.shape).drop_front())
    extent = std::max(extent, d);
  memoryBound = estimateMemory(samples, options.calibrationBatch, extent);
  logMemoryBound();

  auto calibrationStart = Clock::now();
  for (unsigned index = 0; index < stages.size(); ++index)
    if (failed(runStage(index, *batches, calibrationStart)))
      return failure();
  activationPeakBytes = activations->peakResidentBytes();
  activationSpilledBytes = activations->spilledBytes();
  return success();
}

//===----------------------------------------------------------------------===//
// One stage
//===----------------------------------------------------------------------===//

LogicalResult ModelQuantizer::runStage(unsigned index, const Batches &batches,
                                       Clock::time_point calibrationStart) {
  CalibrationStage &stage = *stages[index];
  double doneSeconds = secondsSince(calibrationStart);
  auto start = Clock::now();
  // Each Hessian and its sample count, accumulated over the batches.
  std::vector<NpyArray> counts(states.size());
  for (unsigned m : stage.accumulatedFor) {
    int64_t in = states[m].layer->inFeatures;
    states[m].hessian = NpyArray::zeros(DType::F32, {in, in});
    counts[m] = NpyArray::zeros(DType::I64, {});
  }
  Frontier frontier(batches.batches.size());
  if (failed(accumulateHessians(index, batches, counts, frontier)))
    return failure();
  releasePass(2 * index);
  double hessianSeconds = secondsSince(start);
  times.calibrate += hessianSeconds;
  times.hessianForward += hessianSeconds;
  printStageProgress(index, batches.samples.shape[0], hessianSeconds,
                     doneSeconds, calibrationStart);
  for (unsigned m : stage.layers) {
    if (std::optional<std::string> bad = findNonFinite(states[m].hessian)) {
      fail(states[m].layer->op->getLoc())
          << "the calibration activations that reach layer '"
          << states[m].layer->name << "' are not finite (its Hessian has "
          << *bad << "); check calibration=" << options.calibration
          << " and the layers before it";
      return failure();
    }
    if (failed(quantizeLayer(m)))
      return failure();
    // Only dump-hessians reads a Hessian after its layer is quantized.
    if (options.dumpHessians.empty())
      states[m].hessian = NpyArray();
  }
  // What the later stages read, with this stage's layers quantized.
  start = Clock::now();
  if (stage.propagate && failed(propagate(index, batches, counts, frontier)))
    return failure();
  releasePass(2 * index + 1);
  double propagateSeconds = secondsSince(start);
  times.calibrate += propagateSeconds;
  times.propagateForward += propagateSeconds;
  times.stages.emplace_back(hessianSeconds, propagateSeconds);
  return success();
}

LogicalResult ModelQuantizer::accumulateHessians(unsigned index,
                                                 const Batches &batches,
                                                 std::vector<NpyArray> &counts,
                                                 Frontier &frontier) {
  CalibrationStage &stage = *stages[index];
  size_t unique = stage.hessianResults.size();
  for (size_t b = 0; b < batches.batches.size(); ++b) {
    auto out = runBatch(stage, batches, b, /*outputs=*/false, counts, {});
    if (!out) {
      failBatch(index, batches, b, out.takeError());
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
  return success();
}

LogicalResult ModelQuantizer::propagate(unsigned index, const Batches &batches,
                                        ArrayRef<NpyArray> counts,
                                        Frontier &frontier) {
  CalibrationStage &stage = *stages[index];
  size_t count = batches.batches.size();
  for (size_t b = 0; b < count; ++b) {
    auto out =
        runBatch(stage, batches, b, /*outputs=*/true, counts, frontier[b]);
    if (!out) {
      failBatch(index, batches, b, out.takeError());
      return failure();
    }
    releaseBatch(2 * index + 1, b);
    for (ActivationStore::Kept &slot : frontier[b])
      activations->release(slot);
    frontier[b].clear();
    for (auto [k, v] : llvm::enumerate(stage.outputs)) {
      std::vector<ActivationStore::Kept> &slot = store[v];
      slot.resize(count);
      if (failed(keep(slot[b], std::move((*out)[k]), index)))
        return failure();
    }
  }
  return success();
}

/// Batch `b` through the stage's first function (Hessians) or, with
/// `outputs`, its second, which also takes the batch's frontier.
llvm::Expected<std::vector<NpyArray>>
ModelQuantizer::runBatch(CalibrationStage &stage, const Batches &batches,
                         size_t b, bool outputs, ArrayRef<NpyArray> counts,
                         ArrayRef<ActivationStore::Kept> frontier) {
  std::vector<NpyArray> args;
  for (unsigned i : outputs ? stage.outputArgs : stage.hessianArgs) {
    const StageArg &arg = stage.args[i];
    switch (arg.kind) {
    case StageArg::Input:
      args.push_back(batches.batches[b].borrowed());
      break;
    case StageArg::Crossing: {
      auto loaded = activations->load(store[arg.value][b]);
      if (!loaded)
        return loaded.takeError();
      args.push_back(std::move(*loaded));
      break;
    }
    case StageArg::Constant: {
      auto it = layerOfWeight.find(arg.constant);
      if (it != layerOfWeight.end() && states[it->second].stored) {
        args.push_back(states[it->second].stored->borrowed());
        break;
      }
      const NpyArray *a = constantArray(arg.constant);
      if (!a)
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "a constant of the model has no data (elided resources?)");
      args.push_back(a->borrowed());
      break;
    }
    case StageArg::Hessian:
      args.push_back(states[arg.layer].hessian.borrowed());
      break;
    case StageArg::Count:
      args.push_back(counts[arg.layer].borrowed());
      break;
    }
  }
  if (!outputs)
    return stage.hessians->call(args);
  for (const ActivationStore::Kept &slot : frontier) {
    auto loaded = activations->load(slot);
    if (!loaded)
      return loaded.takeError();
    args.push_back(std::move(*loaded));
  }
  return stage.propagate->call(args);
}

void ModelQuantizer::failBatch(unsigned index, const Batches &batches, size_t b,
                               llvm::Error err) {
  int64_t first = batches.start[b];
  fail(module.getLoc()) << calibrationName() << ", samples [" << first << ", "
                        << first + batches.batches[b].shape[0]
                        << "): running stage " << index + 1
                        << " of the model: " << llvm::toString(std::move(err));
}

void ModelQuantizer::printStageProgress(unsigned index, int64_t samples,
                                        double seconds, double doneSeconds,
                                        Clock::time_point calibrationStart) {
  const CalibrationStage &stage = *stages[index];
  size_t unique = stage.hessianResults.size();
  double elapsed = secondsSince(calibrationStart);
  std::string remaining;
  if (index > 0)
    remaining = ", about " +
                formatDuration(doneSeconds / index * (stages.size() - index) -
                               (elapsed - doneSeconds)) +
                " left";
  log() << llvm::formatv(
      "{0}: stage {1}/{2}: Hessians of {3} layer{4} ({7} input{8}) from "
      "{5} samples, {6:F2} s; {9} elapsed{10}, {11} MiB resident\n",
      kPassName, index + 1, stages.size(), stage.layers.size(),
      stage.layers.size() == 1 ? "" : "s", samples, seconds, unique,
      unique == 1 ? "" : "s", formatDuration(elapsed), remaining,
      residentBytes() >> 20);
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

/// A batch's copy of each value whose last reader is this pass is freed as
/// soon as the batch has run, so that the pass's outputs take the place of
/// its inputs rather than add to them.
void ModelQuantizer::releaseBatch(unsigned pass, size_t b) {
  for (auto &[value, batchValues] : store)
    if (lastUse.lookup(value) == pass && b < batchValues.size())
      activations->release(batchValues[b]);
}

void ModelQuantizer::releasePass(unsigned pass) {
  for (auto it = store.begin(); it != store.end();) {
    auto cur = it++;
    if (lastUse.lookup(cur->first) == pass) {
      for (ActivationStore::Kept &slot : cur->second)
        activations->release(slot);
      store.erase(cur);
    }
  }
  if (options.format != WeightForm::Float)
    for (auto [layer, last] : lastWeightUse)
      if (last == pass && states[layer].result)
        states[layer].stored.reset();
  // Other constants (an embedding table) once their last stage has run:
  // their widened copies, and the archive pages that were read (a gather
  // reads rows of a large table at random).
  for (auto [op, last] : lastConstantUse) {
    if (last != pass)
      continue;
    constantArrays.erase(op);
    Operation *stored = op;
    if (auto ext = dyn_cast<arith::ExtFOp>(op))
      stored = ext.getIn().getDefiningOp();
    if (ElementsAttr attr = stored ? constantElements(stored) : ElementsAttr())
      if (std::optional<ArrayRef<char>> raw = rawElementData(attr))
        releaseParameterPages(*raw);
  }
  releaseFreedMemoryOverBound();
}

LogicalResult ModelQuantizer::keep(ActivationStore::Kept &slot, NpyArray array,
                                   unsigned index) {
  if (llvm::Error err = activations->keep(slot, std::move(array))) {
    fail(module.getLoc()) << "stage " << index + 1 << " of the model: "
                          << llvm::toString(std::move(err));
    return failure();
  }
  return success();
}

/// Between passes: gives freed memory back to the system unless the
/// compiled code's allocator keeps at most one batch's intermediates for
/// reuse and that fits in the memory bound beside what is resident.
/// Mapping fresh memory for every pass costs a page fault per page written
/// (docs/model-quantization.md, "Memory").
void ModelQuantizer::releaseFreedMemoryOverBound() {
  uint64_t cached = runtime::allocatorStats().cachedBytes;
  if (memoryBound.total == 0 || cached > memoryBound.intermediates ||
      uint64_t(residentBytes()) + memoryBound.intermediates > memoryBound.total)
    releaseFreedMemory();
}

/// The quantizer's compiled code and what it maps, which the estimate
/// cannot see before the first layer is quantized.
constexpr uint64_t kQuantizerCodeBytes = 64ull << 20;

MemoryBound ModelQuantizer::estimateMemory(int64_t samples, int64_t batch,
                                           int64_t extent) {
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
              (options.layerErrors
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
    auto fn = cast<func::FuncOp>(stage.hessianModule->lookupSymbol("stage"));
    // After the Hessians, their counts and the rows of their inputs.
    unsigned frontierFrom = 3 * stage.hessianResults.size();
    for (Type t : fn.getFunctionType().getResults().drop_front(frontierFrom)) {
      crossing += bytesOf(t, samples);
      oneBatch += bytesOf(t, batch);
    }
    b.activations = std::min<uint64_t>(crossing, options.activationMemory);
    // One call's intermediates, and its spilled inputs read back.
    b.intermediates = peakIntermediateBytes(fn, batch, extent);
    if (stage.outputModule)
      b.intermediates = std::max(
          b.intermediates,
          peakIntermediateBytes(
              cast<func::FuncOp>(stage.outputModule->lookupSymbol("stage")),
              batch, extent));
    if (crossing > options.activationMemory)
      b.intermediates += oneBatch;
    b.total = b.resident + b.constants + b.weights + b.hessians + b.workspace +
              b.activations + b.intermediates;
    if (b.total > worst.total)
      worst = b;
  }
  return worst;
}
