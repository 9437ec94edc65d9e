//===- QuantizeModelPass.cpp - The gptq-quantize-model pass ---------------===//
//
// The pass parses its options and calls quantizeModel with the run's files:
// those a tool attached (attachRunFiles), which the tool commits with its
// own outputs after the last pass, or else files of its own, committed when
// the run succeeds.
//
//===----------------------------------------------------------------------===//

#include "gptq/Dialect/GPTQ/IR/GPTQ.h"
#include "gptq/Driver/Passes.h"
#include "gptq/Driver/QuantizeModel.h"
#include "gptq/Support/Output.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Quant/IR/Quant.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/PassManager.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQQUANTIZEMODEL
#include "gptq/Driver/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;
using namespace mlir::gptq;

namespace {
struct QuantizeModelPass
    : public gptq::impl::GPTQQuantizeModelBase<QuantizeModelPass> {
  using Base::Base;
  QuantizeModelPass(const GPTQQuantizeModelOptions &options, QuantizeModelIO io)
      : Base(options), io(std::move(io)) {}

  /// From a pipeline built in code (createQuantizeModelPass).
  QuantizeModelIO io;
  /// The tool's files (attachRunFiles), or none.
  RunFiles *files = nullptr;

  /// The options as the pass holds them, in their struct.
  GPTQQuantizeModelOptions passOptions() const {
    GPTQQuantizeModelOptions o;
    o.calibration = calibration;
    o.bits = bits;
    o.groupSize = groupSize;
    o.sym = sym;
    o.actOrder = actOrder;
    o.staticGroups = staticGroups;
    o.percdamp = percdamp;
    o.blockSize = blockSize;
    o.mse = mse;
    o.method = method;
    o.sequential = sequential;
    o.include = include;
    o.exclude = exclude;
    o.hessians = hessians;
    o.dumpHessians = dumpHessians;
    o.report = report;
    o.dumpStages = dumpStages;
    o.entry = entry;
    o.calibrationBatch = calibrationBatch;
    o.parameters = parameters;
    o.vocab = vocab;
    o.activationMemory = activationMemory;
    o.layerErrors = layerErrors;
    o.routers = routers;
    o.moeCalibration = moeCalibration;
    o.hessianMemory = hessianMemory;
    o.minTokens = minTokens;
    o.classifier = classifier;
    o.dampStep = dampStep;
    o.maxAttempts = maxAttempts;
    o.format = format;
    o.compileCache = compileCache;
    return o;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<QuantizeModelOptions> options =
        QuantizeModelOptions::fromPassOptions(passOptions(), module.getLoc());
    if (failed(options))
      return signalPassFailure();
    if (files) {
      if (failed(quantizeModel(module, *options, *files, io)))
        signalPassFailure();
      return;
    }
    // A run of its own: its files are checked against each other only, and
    // committed when it succeeds (uncommitted files are discarded).
    RunFiles own;
    if (failed(quantizeModel(module, *options, own, io)))
      return signalPassFailure();
    if (llvm::Error err = own.commit()) {
      emitError(module.getLoc())
          << getArgument() << ": " << llvm::toString(std::move(err));
      signalPassFailure();
    }
  }
};
} // namespace

std::unique_ptr<Pass>
mlir::gptq::createQuantizeModelPass(const GPTQQuantizeModelOptions &options,
                                    QuantizeModelIO io) {
  return std::make_unique<QuantizeModelPass>(options, std::move(io));
}

void mlir::gptq::attachRunFiles(OpPassManager &pm, RunFiles &files) {
  for (Pass &pass : pm.getPasses())
    if (pass.getTypeID() == TypeID::get<QuantizeModelPass>())
      static_cast<QuantizeModelPass &>(pass).files = &files;
}
