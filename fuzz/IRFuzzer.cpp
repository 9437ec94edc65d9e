//===- IRFuzzer.cpp - libFuzzer target: parsing and verifying gptq IR -----===//
//
// Parses arbitrary text as an MLIR module with the dialects gptq-opt
// registers, verifies it, and prints what verifies, as gptq-opt does with
// its input. Diagnostics are the expected outcome of bad input; a crash, a
// hang or a sanitizer report is a bug.
//
//===----------------------------------------------------------------------===//

#include "gptq/Dialect/GPTQ/IR/GPTQ.h"
#include "gptq/Dialect/UKernel/IR/UKernel.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>

using namespace mlir;

// Our code is instrumented, Debian's libMLIR.so is not, and both allocate
// from a context's llvm::BumpPtrAllocator: the allocator's inline code in
// our objects poisons the unused rest of each slab (LLVM does so under
// AddressSanitizer), which libMLIR's copy never unpoisons before handing it
// out, so its writes there read as use-after-poison. Manual poisoning is
// therefore off; ASan's own checks of heap, stack and globals stay on.
extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0";
}

namespace {
const DialectRegistry &registry() {
  static DialectRegistry *r = [] {
    auto *r = new DialectRegistry();
    // The registration of gptq-opt (registerToolDialects).
    registerAllDialects(*r);
    registerAllExtensions(*r);
    r->insert<gptq::GPTQDialect, gptq::ukernel::UKernelDialect>();
    return r;
  }();
  return *r;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A fresh context per input: nothing carries over between inputs.
  MLIRContext context(registry(), MLIRContext::Threading::DISABLED);
  ScopedDiagnosticHandler quiet(&context,
                                [](Diagnostic &) { return success(); });
  // As the tools read files: a copy that ends in a NUL, which MLIR's lexer
  // relies on to find the end of the buffer.
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size),
          "input.mlir"),
      llvm::SMLoc());
  ParserConfig config(&context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, config);
  if (!module || failed(verify(*module)))
    return 0;
  std::string printed;
  llvm::raw_string_ostream os(printed);
  module->print(os);
  module->print(os, OpPrintingFlags().printGenericOpForm());
  return 0;
}
