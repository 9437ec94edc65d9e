//===- Passes.h - Codegen: the GPU schedule ---------------------*- C++ -*-===//
//
// Passes about no op of ours that schedule linalg on NVIDIA GPUs (blocks,
// threads, shared memory, managed memory) or run the kernels on the host.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_CODEGEN_GPU_PASSES_H
#define GPTQ_CODEGEN_GPU_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace gptq {

#define GEN_PASS_DECL
#include "gptq/Codegen/GPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "gptq/Codegen/GPU/Passes.h.inc"

} // namespace gptq
} // namespace mlir

#endif // GPTQ_CODEGEN_GPU_PASSES_H
