//===- Rewrite.cpp - The model rewritten, its outputs and report ----------===//
//
// Each quantized weight is rewritten to the form the options ask for
// (applyQuantizedWeights), then the run's outputs go to the run's pending
// files (report=, dump-hessians=, dump-stages=), and the summary lines to
// the log.
//
//===----------------------------------------------------------------------===//

#include "ModelQuantizer.h"

#include "gptq/Support/Npz.h"
#include "gptq/Support/Output.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::gptq;
using namespace mlir::gptq::driver;

LogicalResult ModelQuantizer::rewrite() {
  if (scratch) {
    auto mapped = scratch->map();
    if (!mapped) {
      fail(module.getLoc()) << llvm::toString(mapped.takeError());
      return failure();
    }
    spilledData = *mapped;
  }
  WeightForm form = options.format;
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

int64_t ModelQuantizer::quantizedWeightBytes() const {
  int64_t bytes = 0;
  for (const LayerState &state : states) {
    const LayerResult &r = *state.result;
    if (options.format == WeightForm::Float)
      bytes += state.weightBytes;
    else if (options.format == WeightForm::Quant)
      // A byte per code, a float32 scale and a byte of zero point per grid,
      // and at most an int32 place per column (act-order's gather).
      bytes += int64_t(r.codes.data.size()) +
               int64_t(r.scales.data.size()) * 5 / 4 +
               int64_t(r.gIdx.data.size());
    else
      bytes += state.quantizedBytes;
  }
  return bytes;
}

QuantizeModelReport ModelQuantizer::makeReport() {
  QuantizeModelReport summary;
  summary.entry = func.getSymName().str();
  bool givenHessians = !options.hessians.empty();
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
    l.samples = givenHessians ? 0 : state.samples;
    l.tokens = givenHessians ? 0 : state.tokens;
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
    } else if (options.method == QuantizeMethod::GPTQ) {
      summary.roundedToNearest.push_back(layer.name);
    }
    summary.weightBytes += state.weightBytes;
  }
  summary.quantizedWeightBytes = quantizedWeightBytes();
  summary.totalSeconds = times.total;
  summary.calibrationSeconds = times.calibrate;
  summary.compileSeconds = times.compile;
  summary.quantizeSeconds = times.quantize;
  summary.peakResidentBytes = peakResidentBytes();
  summary.memoryBoundBytes = int64_t(memoryBound.total);
  return summary;
}

static llvm::json::Array layersJson(const QuantizeModelReport &report) {
  llvm::json::Array layers;
  for (const QuantizedLayerReport &l : report.layers) {
    llvm::json::Object o{
        {"name", l.name},     {"out", l.out},         {"in", l.in},
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
    layers.push_back(std::move(o));
  }
  return layers;
}

std::string ModelQuantizer::reportJson(const QuantizeModelReport &report) {
  llvm::json::Object config{
      {"bits", options.bits},
      {"group_size", options.groupSize},
      {"sym", options.sym},
      {"act_order", options.actOrder},
      {"static_groups", options.staticGroups},
      {"percdamp", options.percdamp},
      {"block_size", options.blockSize},
      {"mse", options.mse},
      {"method", options.method == QuantizeMethod::GPTQ ? "gptq" : "rtn"},
      {"sequential", calibrationOrderName(options.sequential)},
  };
  llvm::json::Array stagesJson;
  for (auto [index, seconds] : llvm::enumerate(times.stages)) {
    llvm::json::Array names;
    for (unsigned m : stages[index]->layers)
      names.push_back(states[m].layer->name);
    stagesJson.push_back(
        llvm::json::Object{{"layers", std::move(names)},
                           {"hessian_forward_seconds", seconds.first},
                           {"propagation_forward_seconds", seconds.second}});
  }
  const MemoryBound &m = memoryBound;
  llvm::json::Object doc{
      {"entry", report.entry},
      {"stages", std::move(stagesJson)},
      {"config", std::move(config)},
      {"layers", layersJson(report)},
      {"escalated", llvm::json::Array(report.escalated)},
      {"rounded_to_nearest", llvm::json::Array(report.roundedToNearest)},
      {"weight_bytes", report.weightBytes},
      {"quantized_weight_bytes", report.quantizedWeightBytes},
      {"seconds", llvm::json::Object{{"total", times.total},
                                     {"calibration", times.calibrate},
                                     {"compile", times.compile},
                                     {"quantize", times.quantize}}},
      {"timing",
       llvm::json::Object{
           {"total_seconds", times.total},
           {"calibration_forward_seconds", times.hessianForward},
           {"propagation_forward_seconds", times.propagateForward},
           {"quantize_seconds", times.quantize},
           {"quantize_layer_seconds", times.quantizeLayer},
           {"rewrite_seconds", times.rewrite},
           {"compile_seconds", times.compile}}},
      {"peak_rss_bytes", report.peakResidentBytes},
      {"memory",
       llvm::json::Object{
           {"bound_bytes", int64_t(m.total)},
           {"bound_stage", int64_t(m.stage) + 1},
           {"resident_bytes", int64_t(m.resident)},
           {"constant_bytes", int64_t(m.constants)},
           {"weight_bytes", int64_t(m.weights)},
           {"hessian_bytes", int64_t(m.hessians)},
           {"workspace_bytes", int64_t(m.workspace)},
           {"activation_bytes", int64_t(m.activations)},
           {"intermediate_bytes", int64_t(m.intermediates)},
           {"activation_memory_bytes", int64_t(options.activationMemory)},
           {"activation_peak_bytes", int64_t(activationPeakBytes)},
           {"activation_spilled_bytes", int64_t(activationSpilledBytes)},
       }},
  };
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(doc))) << "\n";
  return text;
}

/// The report and the Hessians, together, and with the caller's own
/// outputs: added to the run's pending files.
LogicalResult ModelQuantizer::writeOutputs(const QuantizeModelReport &report) {
  Location loc = module.getLoc();
  PendingOutputs &outputs = files.outputs();
  auto failed = [&](StringRef option, StringRef path, llvm::Error err) {
    fail(loc) << option << path << ": " << llvm::toString(std::move(err));
    return failure();
  };
  if (!options.report.empty())
    if (llvm::Error err = outputs.add(options.report, reportJson(report)))
      return failed("report=", options.report, std::move(err));
  if (!options.dumpHessians.empty()) {
    std::vector<NpzEntryRef> entries;
    for (LayerState &state : states)
      if (state.samples > 0)
        entries.push_back({state.layer->name, &state.hessian});
    if (llvm::Error err = writeNpz(outputs, options.dumpHessians, entries))
      return failed("dump-hessians=", options.dumpHessians, std::move(err));
  }
  if (!options.dumpStages.empty()) {
    // One module of named modules, so that aliases and resources are
    // printed once.
    OwningOpRef<ModuleOp> all = ModuleOp::create(func.getLoc());
    appendStageModules(*all, stages);
    std::string text;
    llvm::raw_string_ostream os(text);
    all->print(os);
    if (llvm::Error err = outputs.add(options.dumpStages, text))
      return failed("dump-stages=", options.dumpStages, std::move(err));
  }
  return success();
}

void ModelQuantizer::printSummary(const QuantizeModelReport &report) {
  int64_t floatBytes = report.weightBytes,
          quantBytes = report.quantizedWeightBytes;
  log() << kPassName << ": " << states.size()
        << (states.size() == 1 ? " layer in " : " layers in ")
        << llvm::formatv("{0:F1}", times.total) << " s (calibration "
        << llvm::formatv("{0:F1}", times.calibrate) << " s, compile "
        << llvm::formatv("{0:F1}", times.compile) << " s, quantize "
        << llvm::formatv("{0:F1}", times.quantize) << " s); weights "
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
        activationSpilledBytes / 1048576.0, options.activationMemory);
  log() << "\n";
  if (!report.escalated.empty()) {
    log() << kPassName << ": " << report.escalated.size()
          << " layer(s) needed more dampening:";
    for (const std::string &s : report.escalated)
      log() << " " << s;
    log() << "\n";
  }
  if (!report.roundedToNearest.empty()) {
    log() << kPassName << ": " << report.roundedToNearest.size()
          << " layer(s) rounded to nearest (calibration did not "
             "reach them, or fewer than min-tokens="
          << options.minTokens << " tokens did):";
    for (const std::string &s : report.roundedToNearest)
      log() << " " << s;
    log() << "\n";
  }
  // How evenly the routers spread the calibration tokens over the experts.
  std::vector<const LayerState *> experts;
  for (const LayerState &state : states)
    if (state.layer->expert && state.samples > 0 && state.tokens >= 0)
      experts.push_back(&state);
  if (experts.empty())
    return;
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
      options.experts == ExpertCalibration::All
          ? "all the rows of their dispatch (moe-calibration=all)"
          : "the tokens routed to each",
      experts.front()->tokens, experts.front()->layer->name,
      experts[experts.size() / 2]->tokens, experts.back()->tokens,
      experts.back()->layer->name, few, options.minTokens);
}
