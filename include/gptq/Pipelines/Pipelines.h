//===- Pipelines.h - GPTQ lowering pipelines --------------------*- C++ -*-===//

#ifndef GPTQ_PIPELINES_PIPELINES_H
#define GPTQ_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
namespace gptq {

/// The Cholesky block of the portable kernels (the GPU's): the step of a
/// block is four parallel loops, so the block is larger than the CPU
/// kernels' 128 to keep a layer's launches few.
inline constexpr int64_t kPortableCholeskyBlock = 256;

/// Options of `gptq-lower-to-cpu-pipeline`.
struct CPUPipelineOptions : public PassPipelineOptions<CPUPipelineOptions> {
  PassOptions::Option<int64_t> choleskyBlock{
      *this, "cholesky-block",
      llvm::cl::desc("Block size of the blocked Cholesky factorization "
                     "(default 128; 256 with the portable kernels, as on a "
                     "GPU, whose steps are four parallel loops each)"),
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
  PassOptions::Option<bool> fuseWidening{
      *this, "fuse-widening",
      llvm::cl::desc(
          "Widen bfloat16 and float16 weights inside the matrix kernel's "
          "packing instead of forming each float32 copy first (false: form "
          "it, as arith.extf alone lowers)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> outlineLayers{
      *this, "outline-layers",
      llvm::cl::desc(
          "Outline each function's repeated layers into one function "
          "called once per layer (gptq-outline-repeated-layers), so that a "
          "layer's code is compiled once (false: every layer inline)"),
      llvm::cl::init(true)};
  PassOptions::Option<std::string> kernels{
      *this, "kernels",
      llvm::cl::desc("Kernels of the gptq ops' lowering: cpu (the CPU "
                     "schedule's) or portable (plain linalg, as the GPU "
                     "pipeline maps them; slower here)"),
      llvm::cl::init("cpu")};
  PassOptions::Option<std::string> cpuIsa{
      *this, "cpu-isa",
      llvm::cl::desc("The instruction set the CPU kernels are written for: "
                     "host (the CPU running the pipeline), generic, avx2, "
                     "avx512 or avx512-vnni"),
      llvm::cl::init("host")};
  PassOptions::Option<std::string> byteDots{
      *this, "byte-dots",
      llvm::cl::desc("The 4-bit decode kernel's byte dot products: auto "
                     "(where cpu-isa has AVX-512 VNNI), on (portable "
                     "operations without it) or off"),
      llvm::cl::init("auto")};
};

/// What gptq-lower-to-nvvm-pipeline makes of the kernels.
enum class KernelFormat { Cubin, PTX, Fatbin };

struct NVVMPipelineOptions
    : public PassPipelineOptions<NVVMPipelineOptions> {
  PassOptions::Option<std::string> chip{
      *this, "chip", llvm::cl::desc("The GPU's architecture (default sm_90)"),
      llvm::cl::init("sm_90")};
  PassOptions::Option<std::string> features{
      *this, "features",
      llvm::cl::desc("PTX features of the target: the least PTX version "
                     "(default +ptx80, which sm_90 needs; raised to the "
                     "least version LLVM takes for the chip)"),
      llvm::cl::init("+ptx80")};
  PassOptions::Option<KernelFormat> format{
      *this, "format", llvm::cl::desc("What the kernels become"),
      llvm::cl::init(KernelFormat::Cubin),
      llvm::cl::values(
          clEnumValN(KernelFormat::Cubin, "bin",
                     "cubin, assembled by the CUDA toolkit's ptxas (default)"),
          clEnumValN(KernelFormat::PTX, "isa",
                     "PTX text, compiled by the driver when loaded"),
          clEnumValN(KernelFormat::Fatbin, "fatbin",
                     "a fat binary of cubin and PTX (needs the toolkit's "
                     "fatbinary)"))};
  PassOptions::Option<int64_t> choleskyBlock{
      *this, "cholesky-block",
      llvm::cl::desc(
          "Block size of the blocked Cholesky factorization: each block is "
          "four kernels (one of them a single block of threads), so larger "
          "blocks make fewer launches and a longer one-block kernel"),
      llvm::cl::init(kPortableCholeskyBlock)};
  PassOptions::Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("The CUDA toolkit (ptxas, libdevice for math "
                     "functions); default: $CUDA_HOME, $CUDA_PATH or "
                     "$CUDA_ROOT, else the toolkit of the ptxas on PATH, else "
                     "/usr/local/cuda"),
      llvm::cl::init("")};
  PassOptions::Option<unsigned> optLevel{
      *this, "opt-level",
      llvm::cl::desc("Optimization level of the kernels' NVPTX code "
                     "generation (default 3)"),
      llvm::cl::init(3)};
  PassOptions::Option<std::string> tensorCores{
      *this, "tensor-cores",
      llvm::cl::desc(
          "Matrix products on tensor cores: 3xtf32 (three TF32 products per "
          "multiply, an error near FP32's; the default from sm_80 on), tf32 "
          "(one, faster, 10 bits of fraction), or off (FP32 on the CUDA "
          "cores; the default before sm_80 and for emulated kernels, where "
          "each emulated warp multiply costs two barriers of the block)"),
      llvm::cl::init("3xtf32")};
  PassOptions::Option<bool> emulate{
      *this, "emulate",
      llvm::cl::desc("Run the kernels on the host CPU instead "
                     "(gptq-launches-to-cpu: blocks in turn, each an OpenMP "
                     "team with its barrier and shared memory): the GPU "
                     "schedule's results without a GPU, for checking; no "
                     "CUDA toolkit or driver needed"),
      llvm::cl::init(false)};
};

/// gptq ops (and linalg/tensor/arith/math/scf on tensors) to the LLVM
/// dialect for the host, with the parallel work as kernels for NVIDIA GPUs
/// embedded as binaries: the portable kernels, bufferized, outermost
/// parallel loops tiled into blocks and threads and outlined, host buffers
/// in managed memory, kernels to NVVM and through ptxas.
void buildNVVMPipeline(OpPassManager &pm, const NVVMPipelineOptions &options);

/// The CUDA toolkit that buildNVVMPipeline uses without a `toolkit` option.
std::string defaultCudaToolkit();

/// The PTX features the kernels of `chip` are built with: `features` (a
/// list such as "+ptx80", the least PTX version the kernels need), raised
/// to the least version LLVM's NVPTX backend accepts for `chip` (8.7 for
/// sm_120: with +ptx80 LLVM stopped with a fatal error). Features that are
/// not PTX versions are left to the checks.
std::string ptxFeaturesFor(llvm::StringRef chip, llvm::StringRef features);

/// gptq ops (and linalg/tensor/arith/math/scf on tensors) to the LLVM
/// dialect for the host CPU: decompose, convert-gptq-to-linalg, inline,
/// bufferize, deallocate, lower to loops and to LLVM.
void buildCPUPipeline(OpPassManager &pm, const CPUPipelineOptions &options);

/// Registers every gptq pipeline with the global pass registry.
void registerPipelines();

} // namespace gptq
} // namespace mlir

#endif // GPTQ_PIPELINES_PIPELINES_H
