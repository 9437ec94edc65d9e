//===- CheckGPUTarget.cpp - Refuse GPU targets that cannot be built -------===//

#include "gptq/Codegen/GPU/Chips.h"
#include "gptq/Codegen/GPU/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include "llvm/TargetParser/Triple.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQCHECKGPUTARGET
#include "gptq/Codegen/GPU/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

extern "C" void LLVMInitializeNVPTXTargetInfo();
extern "C" void LLVMInitializeNVPTXTargetMC();

/// Whether `ptxas` takes `chip`: it assembles an empty module for it
/// (whose .target, sm_75, every later chip takes).
static llvm::Error checkChipWithPtxas(llvm::StringRef chip,
                                      llvm::StringRef ptxas) {
  llvm::SmallString<128> ptx, log;
  if (llvm::sys::fs::createTemporaryFile("gptq-chip", "ptx", ptx) ||
      llvm::sys::fs::createTemporaryFile("gptq-chip", "log", log))
    return llvm::Error::success(); // Nowhere to ask: the build will say.
  auto removeFiles = llvm::make_scope_exit([&] {
    llvm::sys::fs::remove(ptx);
    llvm::sys::fs::remove(log);
  });
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(ptx, ec);
    os << ".version 7.0\n.target sm_75\n.address_size 64\n";
  }
  std::string arch = ("--gpu-name=" + chip).str();
  llvm::StringRef args[] = {ptxas, arch, ptx, "-o", "/dev/null"};
  std::optional<llvm::StringRef> redirects[] = {
      llvm::StringRef(""), llvm::StringRef(log), llvm::StringRef(log)};
  int status = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects);
  auto output = llvm::MemoryBuffer::getFile(log);
  if (status != 0 && output &&
      (*output)->getBuffer().contains("is not defined for option"))
    return llvm::createStringError("'" + chip +
                                   "' is not an architecture that " + ptxas +
                                   " compiles for (see its --help, "
                                   "--gpu-name)");
  return llvm::Error::success();
}

llvm::Error gptq::checkNVPTXChip(llvm::StringRef chip, llvm::StringRef ptxas) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTargetMC();
  llvm::Triple triple("nvptx64-nvidia-cuda");
  std::string message;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, message);
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      target ? target->createMCSubtargetInfo(triple, "sm_90", "") : nullptr);
  if (info && !info->isCPUStringValid(chip)) {
    std::string known;
    for (const llvm::SubtargetSubTypeKV &cpu :
         info->getAllProcessorDescriptions())
      if (llvm::StringRef(cpu.Key).starts_with("sm_"))
        known += (known.empty() ? "" : ", ") + std::string(cpu.Key);
    return llvm::createStringError("'" + chip +
                                   "' is not a GPU architecture that LLVM's "
                                   "NVPTX backend knows (" +
                                   known + ")");
  }
  if (ptxas.empty() || !llvm::sys::fs::can_execute(ptxas))
    return llvm::Error::success();
  return checkChipWithPtxas(chip, ptxas);
}

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
    if (llvm::Error err =
            gptq::checkNVPTXChip(chip, needPtxas ? ptxas.str() : ""))
      return fail("chip " + llvm::toString(std::move(err)));
  }
};
} // namespace
