//===- Allocator.h - Buffer allocator of compiled code ----------*- C++ -*-===//
//
// Compiled gptq code allocates its buffers through the MLIR "generic"
// allocation functions (`finalize-memref-to-llvm{use-generic-functions}`),
// which this runtime library defines. Large buffers (a layer's W, H, U are
// tens of MiB each) come from a cache of 2 MiB-aligned mappings that are
// kept after they are freed, so that a pipeline that allocates and frees
// many matrices of the same size pays the page faults once instead of on
// every allocation. Mid-size buffers (1 KiB - 1 MiB: a decode step's
// activations and scratch) are kept by the thread that frees them, a few
// of each power-of-two size, for its next allocation of that size. Smaller
// buffers go to malloc.
//
// With GPTQ_RUNTIME_HUGE_PAGES=1 the mappings are advised as transparent
// huge pages (MADV_HUGEPAGE). It is off by default: on the virtual machines
// this was measured on, first touches of huge pages cost 14-440 ms per
// 256 MiB depending on what the host had reclaimed, against a steady 90 ms
// with 4 KiB pages, and warm runs were equally fast either way.
// With GPTQ_RUNTIME_STATS=1 in the environment, the figures of
// allocatorStats() are printed to stderr when the process exits.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_RUNTIME_ALLOCATOR_H
#define GPTQ_RUNTIME_ALLOCATOR_H

#include <cstddef>
#include <cstdint>

extern "C" {
/// The allocation entry points that compiled code calls.
void *_mlir_memref_to_llvm_alloc(size_t size);
void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size);
void _mlir_memref_to_llvm_free(void *ptr);
}

namespace mlir::gptq::runtime {

/// Figures of the allocator since the process started.
struct AllocatorStats {
  uint64_t largeAllocations = 0; ///< large buffers handed out
  uint64_t largeReused = 0;      ///< ... of which came from the cache
  uint64_t mappedBytes = 0;      ///< bytes mapped now (in use + cached)
  uint64_t cachedBytes = 0;      ///< bytes kept for reuse now
  uint64_t peakMappedBytes = 0;  ///< the most bytes mapped at any time
  uint64_t keptReused = 0;       ///< mid-size buffers from a thread's pool
};

AllocatorStats allocatorStats();

/// Unmaps every cached (free) large buffer.
void releaseCachedBuffers();

/// The large buffers allocated on a thread while it ran the checked call
/// `call` (currentCheckedCall), outside parallel regions, are recorded
/// until they are freed or the call ends. When it ends, `failed` frees
/// those still live (its results never reach the caller), and otherwise
/// they are forgotten (they are the call's results).
void endCheckedCall(uint64_t call, bool failed);

} // namespace mlir::gptq::runtime

#endif // GPTQ_RUNTIME_ALLOCATOR_H
