//===- OutlineCalibrationStages.cpp - The calibration stages as IR --------===//
//
// Appends to the module the functions that gptq-quantize-model compiles and
// runs for each calibration stage (CalibrationStages.h), without compiling
// or running them.
//
//===----------------------------------------------------------------------===//

#include "gptq/Dialect/GPTQ/IR/GPTQ.h"
#include "gptq/Quantize/ByteCount.h"
#include "gptq/Quantize/CalibrationStages.h"
#include "gptq/Quantize/EntryFunction.h"
#include "gptq/Quantize/LinearLayers.h"
#include "gptq/Quantize/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQOUTLINECALIBRATIONSTAGES
#include "gptq/Quantize/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;
using namespace mlir::gptq;

namespace {

constexpr StringLiteral kPassName = "gptq-outline-calibration-stages";

struct OutlineCalibrationStagesPass
    : public gptq::impl::GPTQOutlineCalibrationStagesBase<
          OutlineCalibrationStagesPass> {
  using Base::Base;

  InFlightDiagnostic fail(Location loc) {
    signalPassFailure();
    return emitError(loc) << kPassName << ": ";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<CalibrationOrder> order = parseCalibrationOrder(sequential);
    if (!order) {
      fail(module.getLoc()) << "sequential='" << sequential
                            << "': expected layers, blocks or none";
      return;
    }
    std::optional<ExpertCalibration> experts =
        parseExpertCalibration(moeCalibration);
    if (!experts) {
      fail(module.getLoc()) << "moe-calibration='" << moeCalibration
                            << "': expected routed or all";
      return;
    }
    std::optional<uint64_t> budget = parseByteCount(hessianMemory);
    if (!budget) {
      fail(module.getLoc())
          << "hessian-memory='" << hessianMemory
          << "': expected bytes (with K, M, G or T) or a percentage";
      return;
    }
    FailureOr<func::FuncOp> entryFunc = findEntryFunction(
        module, entry, [&](Location loc) { return fail(loc); });
    if (failed(entryFunc))
      return;
    func::FuncOp func = *entryFunc;
    StringRef entry = func.getSymName();
    auto filter = LayerNameFilter::create(include, exclude);
    if (!filter) {
      fail(module.getLoc()) << llvm::toString(filter.takeError());
      return;
    }
    LinearLayers linears(module);
    size_t found = 0;
    std::vector<const LinearLayer *> layers = selectQuantizedLayers(
        linears, func, *filter, classifier, routers, found);
    if (layers.empty()) {
      fail(func.getLoc()) << "no linear layer of '@" << entry
                          << "' is selected (" << found << " found; include='"
                          << include << "', exclude='" << exclude
                          << "', classifier=" << (classifier ? "true" : "false")
                          << ", routers=" << (routers ? "true" : "false")
                          << ")";
      return;
    }
    llvm::DenseMap<Operation *, unsigned> layerOfWeight;
    SmallVector<bool> calibrated;
    for (auto [i, layer] : llvm::enumerate(layers)) {
      if (layer->sharedWeight)
        untieWeight(const_cast<LinearLayer &>(*layer));
      layerOfWeight[layer->weightSource] = i;
      calibrated.push_back(uncalibratedReason(func, *layer).empty());
    }
    if (llvm::none_of(calibrated, [](bool c) { return c; })) {
      fail(func.getLoc()) << "calibration reaches none of the selected "
                             "layers";
      return;
    }
    StageCutOptions options;
    options.sequential = *order;
    options.experts = *experts;
    options.hessianBudget = *budget;
    FailureOr<CalibrationStages> cut = cutCalibrationStages(
        module, func, layers, calibrated, layerOfWeight, options, kPassName);
    if (failed(cut)) {
      signalPassFailure();
      return;
    }
    appendStageModules(module, cut->stages);
  }
};

} // namespace
