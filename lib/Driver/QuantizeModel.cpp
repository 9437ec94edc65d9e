//===- QuantizeModel.cpp - GPTQ of every linear layer of a model ----------===//
//
// quantizeModel, and its options parsed from the pass's. The run itself is
// a ModelQuantizer (ModelQuantizer.h).
//
//===----------------------------------------------------------------------===//

#include "gptq/Driver/QuantizeModel.h"
#include "ModelQuantizer.h"

#include "gptq/Execution/Jit.h"
#include "gptq/Quantize/ByteCount.h"

using namespace mlir;
using namespace mlir::gptq;

QuantizeModelOptions::QuantizeModelOptions()
    : activationMemory(parseByteCount("25%").value_or(0)),
      hessianMemory(parseByteCount("1G").value_or(0)),
      compileCache(defaultCacheDir()) {}

namespace {
/// The pass's spelling of an enum-like option, parsed.
template <typename T>
std::optional<T>
parseChoice(llvm::StringRef value,
            std::initializer_list<std::pair<const char *, T>> choices) {
  for (auto [name, choice] : choices)
    if (value == name)
      return choice;
  return std::nullopt;
}
} // namespace

FailureOr<QuantizeModelOptions>
QuantizeModelOptions::fromPassOptions(const GPTQQuantizeModelOptions &pass,
                                      Location loc) {
  auto fail = [&](const llvm::Twine &message) {
    emitError(loc) << driver::kPassName << ": " << message;
    return failure();
  };
  QuantizeModelOptions o;
  if (auto method = parseChoice<QuantizeMethod>(
          pass.method, {{"gptq", QuantizeMethod::GPTQ},
                        {"rtn", QuantizeMethod::RoundToNearest}}))
    o.method = *method;
  else
    return fail("method='" + pass.method + "': expected gptq or rtn");
  if (auto order = parseCalibrationOrder(pass.sequential))
    o.sequential = *order;
  else
    return fail("sequential='" + pass.sequential +
                "': expected layers, blocks or none");
  if (auto experts = parseExpertCalibration(pass.moeCalibration))
    o.experts = *experts;
  else
    return fail("moe-calibration='" + pass.moeCalibration +
                "': expected routed or all");
  if (auto budget = parseByteCount(pass.hessianMemory))
    o.hessianMemory = *budget;
  else
    return fail("hessian-memory='" + pass.hessianMemory +
                "': expected bytes (with K, M, G or T) or a percentage of "
                "physical memory");
  if (pass.minTokens < 0)
    return fail("min-tokens=" + llvm::Twine(int64_t(pass.minTokens)) +
                ": expected 0 or more");
  if (auto format =
          parseChoice<WeightForm>(pass.format, {{"packed", WeightForm::Packed},
                                                {"float", WeightForm::Float},
                                                {"quant", WeightForm::Quant}}))
    o.format = *format;
  else
    return fail("format='" + pass.format +
                "': expected packed, float or quant");
  if (pass.calibrationBatch < 1)
    return fail(
        "calibration-batch=" + llvm::Twine(int64_t(pass.calibrationBatch)) +
        ": expected at least 1");
  if (auto budget = parseByteCount(pass.activationMemory))
    o.activationMemory = *budget;
  else
    return fail("activation-memory='" + pass.activationMemory +
                "': expected bytes (a number with K, M, G or T) or a "
                "percentage of physical memory (25%)");
  o.entry = pass.entry;
  o.bits = pass.bits;
  o.groupSize = pass.groupSize;
  o.sym = pass.sym;
  o.actOrder = pass.actOrder;
  o.staticGroups = pass.staticGroups;
  o.percdamp = pass.percdamp;
  o.blockSize = pass.blockSize;
  o.mse = pass.mse;
  o.dampStep = pass.dampStep;
  o.maxAttempts = pass.maxAttempts;
  o.include = pass.include;
  o.exclude = pass.exclude;
  o.classifier = pass.classifier;
  o.routers = pass.routers;
  o.calibrationBatch = pass.calibrationBatch;
  o.vocab = pass.vocab;
  o.minTokens = pass.minTokens;
  o.layerErrors = pass.layerErrors;
  o.calibration = pass.calibration;
  o.hessians = pass.hessians;
  o.parameters = pass.parameters;
  o.report = pass.report;
  o.dumpHessians = pass.dumpHessians;
  o.dumpStages = pass.dumpStages;
  o.compileCache = pass.compileCache.empty()    ? defaultCacheDir()
                   : pass.compileCache == "off" ? std::string()
                                                : pass.compileCache;
  return o;
}

LogicalResult mlir::gptq::quantizeModel(ModuleOp module,
                                        const QuantizeModelOptions &options,
                                        RunFiles &files,
                                        const QuantizeModelIO &io) {
  return driver::ModelQuantizer(module, options, files, io).run();
}
