//===- LoadParameters.cpp - Attach a module's parameter archives ----------===//
//
// gptq-load-parameters: loadParameters as a pass, for drivers other than
// gptq-opt (which attaches the archives itself, around its pipeline).
//
//===----------------------------------------------------------------------===//

#include "gptq/Execution/Parameters.h"
#include "gptq/Driver/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Location.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQLOADPARAMETERS
#include "gptq/Driver/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {
struct LoadParametersPass
    : public gptq::impl::GPTQLoadParametersBase<LoadParametersPass> {
  using GPTQLoadParametersBase::GPTQLoadParametersBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string file = moduleFile;
    if (file.empty())
      if (auto loc = dyn_cast<FileLineColLoc>(module.getLoc()))
        file = loc.getFilename().str();
    if (llvm::Error err = gptq::loadParameters(module, file)) {
      // At the module's location, without the module itself as a note.
      emitError(module.getLoc()) << llvm::toString(std::move(err));
      return signalPassFailure();
    }
  }
};
} // namespace
