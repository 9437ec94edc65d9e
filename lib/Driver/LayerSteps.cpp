//===- LayerSteps.cpp - One layer of the model, quantized and kept --------===//
//
// A layer is quantized with GPTQ on its Hessian, or rounded to nearest when
// no calibration reaches it; its result is kept: the dequantized weight for
// the stages after it, and under format=packed its packed codes, scales,
// zeros and g_idx in the run's scratch file, so that a model's quantized
// weights need not fit in memory beside its calibration.
//
//===----------------------------------------------------------------------===//

#include "ModelQuantizer.h"

#include "gptq/Support/MappedPages.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::gptq;
using namespace mlir::gptq::driver;

LogicalResult ModelQuantizer::roundLayer(unsigned index, StringRef method) {
  LayerState &state = states[index];
  if (failed(ensureWeight(index)))
    return failure();
  auto start = Clock::now();
  double compiled = rtn->compileSeconds();
  auto result = rtn->roundToNearest(state.weight,
                                    "layer '" + state.layer->name + "' weight");
  if (!result) {
    fail(state.layer->op->getLoc()) << llvm::toString(result.takeError());
    return failure();
  }
  compiled = rtn->compileSeconds() - compiled;
  if (options.layerErrors && state.samples > 0 &&
      failed(outputError(index, result->dequantized, state.rtnError, compiled)))
    return failure();
  return record(index, std::move(*result), method, *rtn, compiled, start);
}

LogicalResult ModelQuantizer::quantizeLayer(unsigned index) {
  LayerState &state = states[index];
  const LinearLayer &layer = *state.layer;
  if (state.samples <= 0) {
    emitWarning(layer.op->getLoc())
        << kPassName << ": no calibration sample reached layer '" << layer.name
        << "'; it is rounded to nearest";
    return roundLayer(index, "rtn (not calibrated)");
  }
  // An expert the router sent too few tokens: its Hessian says little (none
  // at all zeroes every input as dead), so it is rounded to nearest.
  if (state.tokens >= 0 && state.tokens < options.minTokens) {
    emitWarning(layer.op->getLoc())
        << kPassName << ": " << state.tokens << " calibration token"
        << (state.tokens == 1 ? "" : "s") << " reached layer '" << layer.name
        << "', fewer than min-tokens=" << options.minTokens
        << "; it is rounded to nearest";
    return roundLayer(index, "rtn (too few tokens)");
  }
  if (failed(ensureWeight(index)))
    return failure();
  auto start = Clock::now();
  double compiled = gptq->compileSeconds() + rtn->compileSeconds();
  auto warn = [&](const llvm::Twine &message) {
    emitWarning(layer.op->getLoc()) << kPassName << ": " << message.str();
  };
  // The quantizer takes its own weight and Hessian: the run's move in
  // unless the error computation or dump-hessians reads them after.
  bool keepInputs = options.layerErrors;
  auto result = gptq->quantize(
      keepInputs ? NpyArray(state.weight) : std::move(state.weight),
      keepInputs || !options.dumpHessians.empty() ? NpyArray(state.hessian)
                                                  : std::move(state.hessian),
      {"layer '" + layer.name + "' weight",
       "the Hessian of layer '" + layer.name + "'"},
      warn);
  if (!result) {
    fail(layer.op->getLoc()) << llvm::toString(result.takeError());
    return failure();
  }
  compiled = gptq->compileSeconds() + rtn->compileSeconds() - compiled;
  if (options.layerErrors) {
    if (failed(
            outputError(index, result->dequantized, state.gptqError, compiled)))
      return failure();
    // The round-to-nearest error of the same grids, for comparison.
    double rtnCompiled = rtn->compileSeconds();
    auto rounded = rtn->roundToNearest(
        state.weight, "layer '" + state.layer->name + "' weight");
    if (!rounded) {
      fail(layer.op->getLoc()) << llvm::toString(rounded.takeError());
      return failure();
    }
    compiled += rtn->compileSeconds() - rtnCompiled;
    if (failed(
            outputError(index, rounded->dequantized, state.rtnError, compiled)))
      return failure();
  }
  return record(index, std::move(*result), "gptq", *gptq, compiled, start);
}

LogicalResult ModelQuantizer::record(unsigned index, LayerResult result,
                                     StringRef method, LayerQuantizer &packer,
                                     double compiled, Clock::time_point start) {
  LayerState &state = states[index];
  bool packed = options.format == WeightForm::Packed;
  // format=packed: the codes packed by the library's gptq.pack.
  NpyArray words, perm;
  if (packed) {
    // Act-order's g_idx: the columns sorted by group, the activation
    // permuted instead, where a decode step's kernel then reads the weight
    // faster (rowsKernelReadsGroups).
    if (rowsKernelReadsGroups(options.bits, options.groupSize))
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
    words = std::move(*made);
    result.codes = NpyArray();
  }
  // A quantizer's first call compiles it: that time counts as compilation.
  times.compile += compiled;
  times.quantize += secondsSince(start) - compiled;
  state.seconds = result.seconds;
  times.quantizeLayer += result.seconds;
  state.method = method.str();
  // The dequantized weight is kept once, in the layout the model stores it.
  if (state.layer->transposed)
    state.stored = transposed(result.dequantized);
  else
    state.stored = std::move(result.dequantized);
  result.dequantized = NpyArray();
  if (packed && failed(spill(state, words, result, perm)))
    return failure();
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

/// To disk as they are made: the packed words, the scales, zeros and g_idx
/// (released from `result`) and the permutation.
LogicalResult ModelQuantizer::spill(LayerState &state, const NpyArray &packed,
                                    LayerResult &result, const NpyArray &perm) {
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
    auto at =
        scratch->append(ArrayRef<char>(array->data.data(), array->data.size()));
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
  state.quantizedBytes =
      int64_t(packed.data.size()) + int64_t(result.scales.data.size()) * 2 +
      int64_t(result.gIdx.data.size()) + int64_t(perm.data.size());
  result.scales = result.zeros = result.gIdx = NpyArray();
  return success();
}

/// The output error of `quantized` in place of layer `index`'s weight, into
/// `error`; its compilation counts into `compiled`.
LogicalResult ModelQuantizer::outputError(unsigned index,
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

void ModelQuantizer::printLayer(unsigned index) {
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
