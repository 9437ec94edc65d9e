//===- Pipelines.cpp - GPTQ lowering pipelines ----------------------------===//

#include "gptq/Pipelines/Pipelines.h"

#include "gptq/Codegen/CPU/Passes.h"
#include "gptq/Codegen/Common/Passes.h"
#include "gptq/Codegen/GPU/Passes.h"
#include "gptq/Conversion/Passes.h"
#include "gptq/Dialect/GPTQ/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/Quant/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <cstdlib>

using namespace mlir;

namespace {
using namespace mlir::gptq;

/// The target-independent front of both pipelines: entry points with C
/// interfaces, with `outlineLayers` repeated layers as one function each,
/// upstream quant ops lowered, elementwise ops as linalg, the run-time
/// checks, and the contractions' normal form.
void addFront(OpPassManager &pm, bool outlineLayers) {
  pm.addPass(createGPTQExportEntryPoints());
  if (outlineLayers)
    pm.addPass(createGPTQOutlineRepeatedLayers());
  // Weights in upstream quant types (gptq-to-quant-types) dequantize in
  // linalg; the storage casts left between constants and the arithmetic
  // fold away in the first canonicalization.
  pm.addNestedPass<func::FuncOp>(quant::createLowerQuantOps());
  // Elementwise arith and math on tensors become linalg.generic.
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());
  // Dynamic sizes and index data are checked before gptq.quantize_layer is
  // decomposed, and before a dequantized weight is fused into the matrix
  // kernel, so that a failed check names the op the user wrote.
  pm.addPass(createGPTQInsertRuntimeChecks());
  // Contractions of the module's own linalg (models): the target-independent
  // normal form.
  pm.addNestedPass<func::FuncOp>(createGPTQNormalizeContractions());
}

/// The gptq ops decomposed and lowered to the library with `kernels`,
/// inlined, bufferized and deallocated; `forwardArgumentResults` for the
/// CPU's matrix kernel, whose output is its argument's buffer. With the CPU
/// kernels, the factorization and quantize-and-compensate are the prebuilt
/// library's microkernels.
void addLibraryAndBuffers(OpPassManager &pm, int64_t choleskyBlock,
                          StringRef kernels, StringRef cpuIsa,
                          StringRef byteDots, bool forwardArgumentResults) {
  pm.addPass(createGPTQDecomposeQuantizeLayer());
  if (kernels == "cpu") {
    GPTQLayerKernelsToUKernelOptions layer;
    layer.choleskyBlock = choleskyBlock;
    pm.addPass(createGPTQLayerKernelsToUKernel(layer));
  }
  ConvertGPTQToLinalgOptions convert;
  convert.choleskyBlock = choleskyBlock;
  convert.kernels = kernels.str();
  convert.cpuIsa = cpuIsa.str();
  convert.byteDots = byteDots.str();
  pm.addPass(createConvertGPTQToLinalg(convert));
  // Every library call is inlined: the flags and sizes it passes as
  // constants fold the variants it does not ask for away.
  pm.addPass(createInlinerPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createSymbolDCEPass());
  pm.addPass(createCSEPass());

  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // In-place updates of slices leave copies of a subview onto an identical
  // subview; CSE makes them self-copies, which canonicalization removes.
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
  // The matrix kernel's output is its argument's buffer: no clone of it on
  // return.
  if (forwardArgumentResults)
    pm.addPass(createGPTQForwardArgumentResults());
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  pm.addPass(createConvertBufferizationToMemRefPass());
  // Temporaries die at their last use, not at the end of the function, so
  // that later allocations reuse their memory.
  pm.addPass(createGPTQHoistDeallocs());
  // The CPU kernels' table lookups and byte dot products as the target's
  // instructions, once no deallocation pass is left to refuse them.
  if (kernels == "cpu") {
    GPTQSelectKernelFormsOptions forms;
    forms.cpuIsa = cpuIsa.str();
    pm.addPass(createGPTQSelectKernelForms(forms));
  }
}

/// Structured control flow and views as the LLVM conversions take them.
void addControlFlowAndViews(OpPassManager &pm) {
  pm.addPass(createSCFToControlFlowPass());
  // MLIR 22's expand-strided-metadata crashes on expand_shapes that split a
  // dimension into several dynamic sizes: those become reinterpret_casts.
  pm.addPass(createGPTQReinterpretDynamicExpandShapes());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
}

/// Host code to the LLVM dialect, every pipeline's last stage: memref ops
/// through finalize-memref-to-llvm with `memref` (memref.reshape among them,
/// which the generic conversion leaves), failed checks returned to the
/// caller through the runtime (not upstream's print-and-abort), the generic
/// conversion, then `hostDialect` (the host side of OpenMP or GPU ops).
void addHostToLLVM(
    OpPassManager &pm,
    std::optional<FinalizeMemRefToLLVMConversionPassOptions> memref,
    std::unique_ptr<Pass> hostDialect) {
  if (memref)
    pm.addPass(createFinalizeMemRefToLLVMConversionPass(*memref));
  pm.addPass(createGPTQAssertToRuntime());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(std::move(hostDialect));
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}
} // namespace

void gptq::buildCPUPipeline(OpPassManager &pm,
                            const CPUPipelineOptions &options) {
  addFront(pm, options.outlineLayers);
  // The CPU schedule of the contractions: the matrix kernel.
  pm.addNestedPass<func::FuncOp>(createGPTQReassociateReductions());
  GPTQMatmulToUKernelOptions kernel;
  kernel.fuseDequantize = options.fuseDequantize;
  kernel.fuseWidening = options.fuseWidening;
  pm.addPass(createGPTQMatmulToUKernel(kernel));
  // The portable kernels factor in the GPU's blocks unless told otherwise,
  // so that they compute here what the GPU computes.
  int64_t choleskyBlock =
      options.kernels == "portable" && !options.choleskyBlock.hasValue()
          ? kPortableCholeskyBlock
          : options.choleskyBlock;
  addLibraryAndBuffers(pm, choleskyBlock, options.kernels, options.cpuIsa,
                       options.byteDots,
                       /*forwardArgumentResults=*/true);
  // The microkernels as calls of the library built for the instruction set.
  GPTQLowerUKernelsOptions ukernels;
  ukernels.cpuIsa = options.cpuIsa;
  ukernels.byteDots = options.byteDots;
  pm.addPass(createGPTQLowerUKernels(ukernels));

  // The model's elementwise ops and reductions as parallel loops; then
  // those and the kernels' independent column panels run on all cores.
  pm.addNestedPass<func::FuncOp>(createGPTQParallelizeLinalg());
  pm.addPass(createForallToParallelLoopPass());
  pm.addPass(createConvertSCFToOpenMPPass());
  // A loop of one iteration (a decode step's elementwise ops over one
  // token) runs without waking the team.
  pm.addPass(createGPTQSerializeLoneIterations());
  // Each thread takes its share of a loop by its number, without the
  // runtime's scheduler.
  pm.addPass(createGPTQPartitionWorksharingLoops());
  // The conversion wraps each loop body in memref.alloca_scope; the bodies
  // hold no allocas, so canonicalization inlines the scopes, which must be
  // single blocks once SCF becomes control flow.
  pm.addPass(createCanonicalizerPass());
  // Copies between slices become loops that vectorize, not calls that copy
  // element by element.
  pm.addPass(createGPTQExpandStridedCopies());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  // Vector kernels: transfers of partial tiles become guarded 1-D
  // transfers, then masked loads and stores.
  pm.addNestedPass<func::FuncOp>(createConvertVectorToSCFPass(
      VectorTransferToSCFOptions().enableFullUnroll()));
  pm.addPass(createGPTQApproximateMath());
  addControlFlowAndViews(pm);
  pm.addPass(createConvertVectorToLLVMPass());
  std::optional<FinalizeMemRefToLLVMConversionPassOptions> memref;
  if (options.runtimeAllocator) {
    // Buffers come from the runtime's caching allocator (libGPTQRuntime).
    memref.emplace();
    memref->useGenericFunctions = true;
  }
  addHostToLLVM(pm, memref, createConvertOpenMPToLLVMPass());
  // bfloat16 weights read as the integers they are, so that no CPU widens
  // and narrows them lane by lane.
  pm.addPass(createGPTQBFloat16AsIntegers());
}

std::string gptq::defaultCudaToolkit() {
  for (const char *name : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"})
    if (const char *value = std::getenv(name); value && *value)
      return value;
  if (llvm::ErrorOr<std::string> ptxas =
          llvm::sys::findProgramByName("ptxas")) {
    // <toolkit>/bin/ptxas
    llvm::SmallString<256> path(*ptxas);
    llvm::sys::path::remove_filename(path);
    llvm::sys::path::remove_filename(path);
    return std::string(path);
  }
  return "/usr/local/cuda";
}

/// The least PTX version LLVM 22's NVPTX backend takes for `chip`, where
/// it is above 8.0 (found with llc -mcpu=CHIP -mattr=+ptxNN); 0 for the
/// others.
static unsigned leastPtxVersion(StringRef chip) {
  return llvm::StringSwitch<unsigned>(chip)
      .Cases({"sm_100", "sm_100a", "sm_101", "sm_101a"}, 86)
      .Cases({"sm_120", "sm_120a"}, 87)
      .Cases({"sm_100f", "sm_101f", "sm_103", "sm_103a", "sm_103f", "sm_120f",
              "sm_121", "sm_121a", "sm_121f"},
             88)
      .Cases({"sm_88", "sm_110", "sm_110a", "sm_110f"}, 90)
      .Default(0);
}

std::string gptq::ptxFeaturesFor(StringRef chip, StringRef features) {
  SmallVector<StringRef> list;
  features.split(list, ',', -1, /*KeepEmpty=*/false);
  unsigned asked = 0;
  for (StringRef feature : list) {
    StringRef number = feature.trim();
    unsigned version;
    if (!number.consume_front("+ptx") || number.getAsInteger(10, version))
      return features.str();
    asked = std::max(asked, version);
  }
  unsigned least = leastPtxVersion(chip);
  if (least <= asked)
    return features.str();
  return "+ptx" + std::to_string(least);
}

/// The dynamic shared memory that a block of `chip` may ask for (CUDA's
/// per-block opt-in limit); 48 KiB, which every chip allows without
/// opting in, for chips not listed.
static int64_t sharedBytesPerBlock(StringRef chip) {
  return llvm::StringSwitch<int64_t>(chip)
      .Cases({"sm_90", "sm_90a", "sm_100", "sm_100a"}, 232448)
      .Cases({"sm_80", "sm_87"}, 166912)
      .Cases({"sm_86", "sm_89", "sm_120"}, 101376)
      .Cases({"sm_70", "sm_72"}, 98304)
      .Case("sm_75", 65536)
      .Default(49152);
}

/// The products' tensor cores: the option's, but off by default where the
/// chip has none for TF32 (before sm_80) and on emulated kernels (each
/// emulated warp multiply costs two barriers of the whole block: given
/// explicitly, for tests).
static std::string tensorCoresFor(const NVVMPipelineOptions &options) {
  if (options.tensorCores.hasValue())
    return options.tensorCores.getValue();
  unsigned version = 0;
  StringRef chip = options.chip;
  bool hasTF32 = chip.consume_front("sm_") &&
                 !chip.take_while(llvm::isDigit).getAsInteger(10, version) &&
                 version >= 80;
  if (options.emulate || !hasTF32)
    return "off";
  return options.tensorCores.getValue();
}

void gptq::buildNVVMPipeline(OpPassManager &pm,
                             const NVVMPipelineOptions &options) {
  // Emulated kernels need no toolkit: they never become binaries.
  std::string toolkit;
  if (!options.emulate) {
    toolkit = options.toolkit.empty() ? defaultCudaToolkit()
                                      : options.toolkit.getValue();
    GPTQCheckGPUTargetOptions check;
    check.chip = options.chip;
    check.features = ptxFeaturesFor(options.chip, options.features);
    check.toolkit = toolkit;
    check.needPtxas = options.format != KernelFormat::PTX;
    pm.addPass(createGPTQCheckGPUTarget(check));
  }
  // The target-independent stages of the CPU pipeline, with the portable
  // kernels.
  addFront(pm, /*outlineLayers=*/false);
  addLibraryAndBuffers(pm, options.choleskyBlock, "portable", "generic",
                       "off", /*forwardArgumentResults=*/false);

  // The GPU schedule: every copy and every linalg op a parallel loop, each
  // outermost one tiled into blocks and threads, and a kernel.
  GPTQExpandStridedCopiesOptions copies;
  copies.identity = true;
  pm.addPass(createGPTQExpandStridedCopies(copies));
  pm.addPass(createForallToParallelLoopPass());
  // Matrix products as tiled kernels with their operands' tiles in shared
  // memory; the other linalg ops as parallel loops.
  GPTQGPUTileContractionsOptions tile;
  tile.tensorCores = tensorCoresFor(options);
  pm.addNestedPass<func::FuncOp>(createGPTQGPUTileContractions(tile));
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createGPTQMapParallelLoopsToGPU());
  pm.addNestedPass<func::FuncOp>(createConvertParallelLoopToGpuPass());
  // Constant launch sizes, which outlining records on the kernels
  // (known_block_size) for the NVVM lowering.
  pm.addPass(createCanonicalizerPass());
  // Matrices that every thread of a block reads alike (U's block in the
  // quantize kernel) in shared memory, up to what the chip gives a block.
  GPTQStageUniformReadsOptions stage;
  stage.maxBytes = sharedBytesPerBlock(options.chip);
  pm.addNestedPass<func::FuncOp>(createGPTQStageUniformReads(stage));
  if (options.emulate) {
    // The launches on the host's cores, lowered as the CPU pipeline lowers
    // its loops; the warps' matrix multiplies through shared memory.
    pm.addNestedPass<func::FuncOp>(createGPTQEmulateWarpMMA());
    pm.addPass(createGPTQLaunchesToCPU());
    // Math functions that the CPU cannot take from LLVM (erf, ...), as the
    // CPU pipeline computes them; real kernels use libdevice's.
    pm.addPass(createGPTQApproximateMath());
    addControlFlowAndViews(pm);
    addHostToLLVM(pm, FinalizeMemRefToLLVMConversionPassOptions(),
                  createConvertOpenMPToLLVMPass());
    return;
  }
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createGPTQManagedMemory());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  // Kernels to NVVM, host code to LLVM, kernels to binaries.
  addControlFlowAndViews(pm);
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = ptxFeaturesFor(options.chip, options.features);
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertNVGPUToNVVMPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps());
  pm.addNestedPass<gpu::GPUModuleOp>(createGPTQExternDynamicSharedMemory());
  addHostToLLVM(pm, FinalizeMemRefToLLVMConversionPassOptions(),
                createGpuToLLVMConversionPass());
  GpuModuleToBinaryPassOptions binary;
  switch (options.format) {
  case KernelFormat::Cubin:
    binary.compilationTarget = "bin";
    break;
  case KernelFormat::PTX:
    binary.compilationTarget = "isa";
    break;
  case KernelFormat::Fatbin:
    binary.compilationTarget = "fatbin";
    break;
  }
  binary.toolkitPath = toolkit;
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

void gptq::registerPipelines() {
  PassPipelineRegistration<NVVMPipelineOptions>(
      "gptq-lower-to-nvvm-pipeline",
      "Lower gptq ops and linalg on tensors to host code in the LLVM dialect "
      "with kernels for NVIDIA GPUs (the portable kernels of "
      "convert-gptq-to-linalg, bufferize, deallocate, outermost parallel "
      "loops tiled into blocks and threads, gpu-kernel-outlining, host "
      "buffers in managed memory, NVVM, gpu-to-llvm, gpu-module-to-binary)",
      buildNVVMPipeline);
  PassPipelineRegistration<CPUPipelineOptions>(
      "gptq-lower-to-cpu-pipeline",
      "Lower gptq ops and linalg on tensors to the LLVM dialect for the host "
      "CPU (contractions on the matrix kernel, decompose, "
      "convert-gptq-to-linalg, inline, bufferize, deallocate, parallel and "
      "vectorizable loops, LLVM)",
      buildCPUPipeline);
}
