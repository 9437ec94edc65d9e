//===- CudaRuntime.h - CUDA runtime of compiled GPU code --------*- C++ -*-===//
//
// Code lowered by MLIR's `gpu-to-llvm` conversion loads its kernels, launches
// them and moves memory through the mgpu* functions below; this library
// implements them on the CUDA driver API. It does not link the driver: the
// first call loads libcuda.so.1 (or the library that the environment
// variable GPTQ_CUDA_DRIVER names), so that the library builds without the
// CUDA toolkit and loads on machines without a GPU, where only calling it
// fails.
//
// Lowered code creates a stream around every launch and copy, and allocates
// its temporaries afresh in every step of its loops. Both are kept for reuse:
// destroyed streams go back to a pool, and freed memory to a cache of blocks
// (sizes rounded up to powers of two up to 1 MiB, to multiples of 2 MiB
// above; a block serves requests of half its size and more; up to 8 GiB
// kept idle, all of it returned to the driver when an allocation finds the
// device full).
//
// The calls run in the primary context of the default device (device 0
// unless mgpuSetDefaultDevice chose another), which is retained on first use
// and made current on each calling thread; it stays current there, as with
// the CUDA runtime API. On first use the context's device heap (malloc in
// kernels) is set to 256 MiB.
//
// A failing driver call, and a driver that cannot be loaded or has no device,
// is a failed run-time check (Checks.h): through gptq_runtime_call_checked
// its message, such as "cuda: cuModuleLoadData failed:
// CUDA_ERROR_INVALID_IMAGE (device 0)", comes back to the caller; elsewhere
// it is printed and the process exits with status 1. A message lives until
// the next failure on the same thread.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_RUNTIME_CUDARUNTIME_H
#define GPTQ_RUNTIME_CUDARUNTIME_H

#include <cstddef>
#include <cstdint>

extern "C" {
/// Returns 0 when the CUDA driver loads, initializes and has the default
/// device, and writes a description of the device ("NVIDIA H200, sm_90,
/// 139 GiB") into `message`; else returns non-zero with the reason in
/// `message`. Truncates to `capacity` bytes (with the terminating null) and
/// never fails as a check does: tools call it before compiling for a GPU.
int gptq_cuda_probe(char *message, size_t capacity);

/// As gptq_cuda_probe, but writes the default device's architecture as a
/// target name ("sm_90") on success.
int gptq_cuda_chip(char *chip, size_t capacity);

/// Frees memory of mgpuMemAlloc, as `free` does for malloc: what callers of
/// compiled GPU code release results with.
void gptq_cuda_free_managed(void *ptr);

/// A module of a cubin, fatbin or null-terminated PTX image, loaded into the
/// driver on its first mgpuModuleGetFunction (compiled code loads its
/// modules from global constructors: a program that launches nothing never
/// needs the driver). `size` is not needed: the driver reads the image's
/// own headers. The image must outlive the module.
void *mgpuModuleLoad(void *data, size_t size);
/// The same for null-terminated PTX `data`, JIT-compiled by the driver at
/// `optLevel` (0 to 4) when loaded. LLVM 22 passes no size here; a
/// definition that expected one would read garbage.
void *mgpuModuleLoadJIT(void *data, int optLevel);
/// Unloads a module (from the driver, if it was loaded).
void mgpuModuleUnload(void *module);
/// Loads `module` if it is not loaded yet (a failure to load is this
/// call's), then looks up its function `name`.
void *mgpuModuleGetFunction(void *module, const char *name);

/// Launches `function` on `stream` with `smem` bytes of dynamic shared
/// memory (a grid with no blocks in some dimension launches nothing: a
/// parallel loop without iterations), raising the function's limit first when `smem` is above the
/// default 48 KiB. `params` points to the kernel's arguments, as for
/// cuLaunchKernel; the driver knows their count.
void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t paramsCount);

/// A stream from the pool, or a new one; destroying returns it to the pool
/// (up to 64 kept), work still on it staying ordered before later work.
void *mgpuStreamCreate();
void mgpuStreamDestroy(void *stream);
void mgpuStreamSynchronize(void *stream);
void mgpuStreamWaitEvent(void *stream, void *event);

/// Events only order streams: they record no time.
void *mgpuEventCreate();
void mgpuEventDestroy(void *event);
void mgpuEventSynchronize(void *event);
void mgpuEventRecord(void *event, void *stream);

/// Allocates device memory, or managed memory that the host can access too
/// when `isHostShared`; null for 0 bytes. The allocation is synchronous, not
/// ordered on `stream`; it reuses a cached block of the same kind when one
/// fits.
void *mgpuMemAlloc(uint64_t sizeBytes, void *stream, bool isHostShared);
/// Frees memory of mgpuMemAlloc (null does nothing): after waiting for the
/// device's work, whatever `stream` is (as cuMemFree does), the block goes
/// to the cache, or back to the driver when the cache is full. Memory that
/// did not come from mgpuMemAlloc goes to the driver.
void mgpuMemFree(void *ptr, void *stream);
/// Copies between any two of host and device memory, ordered on `stream`.
void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream);
/// Fills `count` 32-bit (16-bit) words at `dst`, ordered on `stream`.
void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream);
void mgpuMemset16(void *dst, unsigned short value, size_t count, void *stream);

/// Chooses the device of later calls. A device that does not exist is an
/// error at the next call, not here.
void mgpuSetDefaultDevice(int32_t device);

/// Page-locks the host memory that the elements of a ranked memref span
/// (see getMemRefSpan) for all contexts; a memref without elements is left
/// alone. `descriptor` points to the memref's descriptor.
void mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor,
                               int64_t elementSizeBytes);
/// Undoes mgpuMemHostRegisterMemRef of the same memref.
void mgpuMemHostUnregisterMemRef(int64_t rank, void *descriptor,
                                 int64_t elementSizeBytes);
void mgpuMemHostRegister(void *ptr, uint64_t sizeBytes);
void mgpuMemHostUnregister(void *ptr);

/// What the stream pool and the memory cache hold.
struct GPTQCudaCacheStats {
  uint64_t liveBlocks = 0;  ///< allocated and not freed
  uint64_t idleBlocks = 0;  ///< freed, kept for reuse
  uint64_t idleBytes = 0;   ///< their size
  uint64_t reused = 0;      ///< allocations served from the cache so far
  uint64_t idleStreams = 0; ///< streams in the pool
};
GPTQCudaCacheStats gptq_cuda_cache_stats();
/// Returns the cache's idle memory to the driver.
void gptq_cuda_release_cached_memory();
}

namespace mlir::gptq::runtime {

/// The bytes from the lowest to the highest element of a memref.
struct MemRefSpan {
  void *begin = nullptr;
  uint64_t bytes = 0;
};

/// Computes the span of the elements of the ranked memref whose descriptor
/// `descriptor` points to: {allocated, aligned, offset, sizes[rank],
/// strides[rank]}, with pointers and 64-bit integers. Strides may be
/// negative; a memref without elements spans 0 bytes. Returns false when a
/// size is negative or the span does not fit in 64 bits.
bool getMemRefSpan(int64_t rank, const void *descriptor,
                   int64_t elementSizeBytes, MemRefSpan &span);

} // namespace mlir::gptq::runtime

#endif // GPTQ_RUNTIME_CUDARUNTIME_H
