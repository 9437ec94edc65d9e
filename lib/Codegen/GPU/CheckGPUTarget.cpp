//===- CheckGPUTarget.cpp - Refuse GPU targets that cannot be built -------===//

#include "gptq/Codegen/GPU/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQCHECKGPUTARGET
#include "gptq/Codegen/GPU/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {
struct GPTQCheckGPUTargetPass
    : gptq::impl::GPTQCheckGPUTargetBase<GPTQCheckGPUTargetPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // At the module's location, without the module attached to the
    // diagnostic (which would print all of it).
    auto fail = [&](const Twine &message) {
      mlir::emitError(module.getLoc())
          << "gptq-lower-to-nvvm-pipeline: " << message;
      signalPassFailure();
    };
    if (!llvm::Regex("^sm_[0-9]+[af]?$").match(chip))
      return fail("chip '" + chip +
                  "' is not an NVIDIA GPU architecture such as sm_90");
    SmallVector<StringRef> list;
    StringRef(features).split(list, ',', -1, /*KeepEmpty=*/false);
    for (StringRef feature : list)
      if (!llvm::Regex("^\\+ptx[0-9]+$").match(feature.trim()))
        return fail("features '" + features +
                    "' is not a list of PTX versions such as +ptx80");
    if (toolkit.empty())
      return fail("no CUDA toolkit given");
    llvm::SmallString<256> libdevice(toolkit);
    llvm::sys::path::append(libdevice, "nvvm", "libdevice");
    if (!llvm::sys::fs::is_directory(libdevice))
      return fail("the CUDA toolkit '" + toolkit + "' has no " + libdevice +
                  " (the math functions of the kernels); give the toolkit "
                  "with toolkit=DIR or $CUDA_HOME");
    llvm::SmallString<256> ptxas(toolkit);
    llvm::sys::path::append(ptxas, "bin", "ptxas");
    if (needPtxas && !llvm::sys::fs::can_execute(ptxas))
      return fail("the CUDA toolkit '" + toolkit + "' has no " + ptxas +
                  " to assemble cubin; give the toolkit with toolkit=DIR or "
                  "$CUDA_HOME, or ask for PTX with format=isa");
  }
};
} // namespace
