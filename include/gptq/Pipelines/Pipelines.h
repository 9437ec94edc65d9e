//===- Pipelines.h - GPTQ lowering pipelines --------------------*- C++ -*-===//

#ifndef GPTQ_PIPELINES_PIPELINES_H
#define GPTQ_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
namespace gptq {

/// Options of `gptq-lower-to-cpu-pipeline`.
struct CPUPipelineOptions : public PassPipelineOptions<CPUPipelineOptions> {
  PassOptions::Option<int64_t> choleskyBlock{
      *this, "cholesky-block",
      llvm::cl::desc("Block size of the blocked Cholesky factorization"),
      llvm::cl::init(128)};
  PassOptions::Option<bool> runtimeAllocator{
      *this, "runtime-allocator",
      llvm::cl::desc(
          "Allocate buffers through the gptq-mlir runtime "
          "(_mlir_memref_to_llvm_alloc/free in libGPTQRuntime.so, which "
          "keeps large buffers for reuse) instead of malloc/free"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> fuseDequantize{
      *this, "fuse-dequantize",
      llvm::cl::desc(
          "Dequantize quantized weights inside the matrix kernel's packing "
          "instead of forming each float weight first (false: form it, as "
          "gptq.unpack and gptq.dequantize alone lower)"),
      llvm::cl::init(true)};
  PassOptions::Option<std::string> kernels{
      *this, "kernels",
      llvm::cl::desc("Kernels of the gptq ops' lowering: cpu (the CPU "
                     "schedule's) or portable (plain linalg, as the GPU "
                     "pipeline maps them; slower here)"),
      llvm::cl::init("cpu")};
};

/// gptq ops (and linalg/tensor/arith/math/scf on tensors) to the LLVM
/// dialect for the host CPU: decompose, convert-gptq-to-linalg, inline,
/// bufferize, deallocate, lower to loops and to LLVM.
void buildCPUPipeline(OpPassManager &pm, const CPUPipelineOptions &options);

/// Registers every gptq pipeline with the global pass registry.
void registerPipelines();

} // namespace gptq
} // namespace mlir

#endif // GPTQ_PIPELINES_PIPELINES_H
