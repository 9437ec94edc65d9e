//===- ExternDynamicSharedMemory.cpp - Dynamic shared memory as extern ----===//
//
// The zero-size shared-memory arrays of gpu.dynamic_shared_memory become
// external declarations, which PTX prints as the kernel's `.extern .shared`
// array: the dynamic shared memory of the launch.
//
//===----------------------------------------------------------------------===//

#include "gptq/Codegen/GPU/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQEXTERNDYNAMICSHAREDMEMORY
#include "gptq/Codegen/GPU/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {
struct GPTQExternDynamicSharedMemoryPass
    : gptq::impl::GPTQExternDynamicSharedMemoryBase<
          GPTQExternDynamicSharedMemoryPass> {
  void runOnOperation() override {
    for (auto global : getOperation().getOps<LLVM::GlobalOp>()) {
      auto array = dyn_cast<LLVM::LLVMArrayType>(global.getGlobalType());
      if (global.getAddrSpace() !=
              static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared) ||
          !array || array.getNumElements() != 0 || global.getValueOrNull() ||
          !global.getInitializerRegion().empty())
        continue;
      global.setLinkage(LLVM::Linkage::External);
    }
  }
};
} // namespace
