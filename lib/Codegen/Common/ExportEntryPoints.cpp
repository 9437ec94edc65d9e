//===- ExportEntryPoints.cpp - Mark public functions as entry points ------===//

#include "gptq/Codegen/Common/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQEXPORTENTRYPOINTS
#include "gptq/Codegen/Common/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {
struct GPTQExportEntryPointsPass
    : gptq::impl::GPTQExportEntryPointsBase<GPTQExportEntryPointsPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (!func.isPublic() || func.isExternal())
        continue;
      func->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
      func->setAttr("gptq.signature", TypeAttr::get(func.getFunctionType()));
      // The caller's arrays are read-only: bufferization copies where the
      // function would write into a tensor argument. An explicit setting
      // is kept.
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        if (isa<TensorType>(func.getArgumentTypes()[i]) &&
            !func.getArgAttr(i, "bufferization.writable"))
          func.setArgAttr(i, "bufferization.writable",
                          BoolAttr::get(ctx, false));
    }
  }
};
} // namespace
