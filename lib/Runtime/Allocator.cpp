//===- Allocator.cpp - Buffer allocator of compiled code ------------------===//
//
// Every buffer starts 64 bytes (or its alignment) after the start of its
// block; the 64 bytes before it hold a header that says how the block was
// obtained, so that free needs no lookup.
//
//===----------------------------------------------------------------------===//

#include "gptq/Runtime/Allocator.h"

#include "gptq/Runtime/Checks.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <sys/mman.h>
#include <unistd.h>
#include <unordered_map>
#include <vector>

namespace {

constexpr size_t kHeaderBytes = 64;
/// Buffers of at least this many bytes come from the cache of mappings.
constexpr size_t kLargeBytes = size_t(1) << 20;
/// Mappings are multiples of the huge page size, aligned to it.
constexpr size_t kGranule = size_t(2) << 20;
constexpr uint64_t kSmallMagic = 0x67707471736d616cULL; // "gptqsmal"
constexpr uint64_t kPooledMagic = 0x677074716b656570ULL; // "gptqkeep"
constexpr uint64_t kLargeMagic = 0x6770747162696721ULL; // "gptqbig!"

struct alignas(kHeaderBytes) Header {
  uint64_t magic;
  size_t blockBytes; // size of the block (mapping) for large buffers
  void *block;       // start of the block
};
static_assert(sizeof(Header) == kHeaderBytes, "header is one cache line");

struct Block {
  void *start;
  size_t bytes;
};

class LargeCache {
public:
  /// A block of at least `bytes`; its actual size is stored in `bytes`.
  void *take(size_t &bytes) {
    std::lock_guard<std::mutex> lock(mutex);
    // Best fit among cached blocks no more than twice the size needed.
    auto best = free.end();
    for (auto it = free.begin(); it != free.end(); ++it)
      if (it->bytes >= bytes && it->bytes <= 2 * bytes &&
          (best == free.end() || it->bytes < best->bytes))
        best = it;
    if (best != free.end()) {
      Block b = *best;
      free.erase(best);
      stats.cachedBytes -= b.bytes;
      ++stats.largeAllocations;
      ++stats.largeReused;
      bytes = b.bytes;
      return b.start;
    }
    void *start = map(bytes);
    if (!start && !free.empty()) {
      // The cached blocks did not fit: give them back and try again.
      for (const Block &b : free)
        unmapLocked(b);
      free.clear();
      start = map(bytes);
    }
    if (start) {
      ++stats.largeAllocations;
      stats.mappedBytes += bytes;
      stats.peakMappedBytes =
          std::max(stats.peakMappedBytes, stats.mappedBytes);
    }
    return start;
  }

  void give(void *start, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex);
    free.push_back({start, bytes});
    stats.cachedBytes += bytes;
    // Keep at most limit() bytes cached: unmap the largest blocks first.
    while (stats.cachedBytes > limit() && !free.empty()) {
      auto largest = std::max_element(
          free.begin(), free.end(),
          [](const Block &a, const Block &b) { return a.bytes < b.bytes; });
      unmapLocked(*largest);
      free.erase(largest);
    }
  }

  void releaseAll() {
    std::lock_guard<std::mutex> lock(mutex);
    for (const Block &b : free)
      unmapLocked(b);
    free.clear();
  }

  mlir::gptq::runtime::AllocatorStats snapshot() {
    std::lock_guard<std::mutex> lock(mutex);
    return stats;
  }

private:
  /// A quarter of the physical memory, at most 8 GiB.
  static size_t limit() {
    static const size_t value = [] {
      long pages = sysconf(_SC_PHYS_PAGES);
      long page = sysconf(_SC_PAGESIZE);
      size_t physical = pages > 0 && page > 0
                            ? static_cast<size_t>(pages) * page
                            : size_t(4) << 30;
      return std::min(physical / 4, size_t(8) << 30);
    }();
    return value;
  }

  /// A fresh mapping of `bytes` (a multiple of kGranule) aligned to kGranule,
  /// backed by huge pages where the kernel allows.
  static void *map(size_t bytes) {
    size_t over = bytes + kGranule;
    void *raw = mmap(nullptr, over, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
      return nullptr;
    auto addr = reinterpret_cast<uintptr_t>(raw);
    uintptr_t aligned = (addr + kGranule - 1) & ~(kGranule - 1);
    if (size_t head = aligned - addr)
      munmap(raw, head);
    if (size_t tail = over - (aligned - addr) - bytes)
      munmap(reinterpret_cast<void *>(aligned + bytes), tail);
#ifdef MADV_HUGEPAGE
    static const bool huge = [] {
      const char *env = std::getenv("GPTQ_RUNTIME_HUGE_PAGES");
      return env && std::strcmp(env, "1") == 0;
    }();
    if (huge)
      madvise(reinterpret_cast<void *>(aligned), bytes, MADV_HUGEPAGE);
#endif
    return reinterpret_cast<void *>(aligned);
  }

  void unmapLocked(const Block &b) {
    munmap(b.start, b.bytes);
    stats.cachedBytes -= b.bytes;
    stats.mappedBytes -= b.bytes;
  }

  std::mutex mutex;
  std::vector<Block> free;
  mlir::gptq::runtime::AllocatorStats stats;
};

void printStats() {
  mlir::gptq::runtime::AllocatorStats s = mlir::gptq::runtime::allocatorStats();
  std::fprintf(stderr,
               "gptq-mlir runtime: %llu large buffers (%llu reused), peak "
               "%.1f MiB mapped, %.1f MiB mapped at exit; %llu mid-size "
               "buffers kept for reuse\n",
               static_cast<unsigned long long>(s.largeAllocations),
               static_cast<unsigned long long>(s.largeReused),
               s.peakMappedBytes / 1048576.0, s.mappedBytes / 1048576.0,
               static_cast<unsigned long long>(s.keptReused));
}

LargeCache &cache() {
  // Never destroyed: compiled code may free buffers during static
  // destruction of other objects.
  static LargeCache *instance = new LargeCache();
  return *instance;
}

/// Registers printStats when the library is loaded, if asked to.
struct StatsAtExit {
  StatsAtExit() {
    const char *env = std::getenv("GPTQ_RUNTIME_STATS");
    if (env && *env && std::strcmp(env, "0") != 0)
      std::atexit(printStats);
  }
} statsAtExit;

size_t roundUp(size_t value, size_t to) { return (value + to - 1) / to * to; }

/// The live large buffers of checked calls (endCheckedCall), by their data
/// address: the call each was allocated in.
std::mutex callBuffersMutex;
std::atomic<size_t> callBufferCount{0};
std::unordered_map<void *, uint64_t> &callBuffers() {
  static auto *buffers = new std::unordered_map<void *, uint64_t>();
  return *buffers;
}

void trackCallBuffer(void *data) {
  uint64_t call = mlir::gptq::runtime::currentCheckedCall();
  if (!call || mlir::gptq::runtime::inParallelRegion())
    return;
  std::lock_guard<std::mutex> lock(callBuffersMutex);
  callBuffers()[data] = call;
  callBufferCount.store(callBuffers().size());
}

void untrackCallBuffer(void *data) {
  if (callBufferCount.load() == 0)
    return;
  std::lock_guard<std::mutex> lock(callBuffersMutex);
  callBuffers().erase(data);
  callBufferCount.store(callBuffers().size());
}

/// Blocks of a power-of-two size from kPoolMin to kPoolMax bytes (buffers
/// over 1 KiB and under kLargeBytes, 64-byte aligned: a decode step's
/// activations, attention scores, scratch) are kept by the thread that
/// frees them, up to kPoolDepth of each size and kPoolBytes in all, and
/// handed out again by its next allocation of that size without malloc: a
/// decode step allocates and frees about 1400 of them a token on the 1B
/// shape. Smaller blocks take malloc's per-thread cache already.
constexpr size_t kPoolMinLog = 11;                          // 2 KiB
constexpr size_t kPoolMaxLog = 20;                          // 1 MiB
constexpr size_t kPoolClasses = kPoolMaxLog - kPoolMinLog + 1;
constexpr size_t kPoolDepth = 16;
constexpr size_t kPoolBytes = size_t(8) << 20;

/// The size class of a block of `bytes`, or -1 when it is not pooled.
int poolClass(size_t bytes) {
  if (bytes <= (size_t(1) << 10) || bytes > (size_t(1) << kPoolMaxLog))
    return -1;
  size_t log = kPoolMinLog;
  while ((size_t(1) << log) < bytes)
    ++log;
  return static_cast<int>(log - kPoolMinLog);
}

/// A thread's kept blocks. Trivially destructible, so that a buffer freed
/// after the thread's destructors ran (compiled code run from a static
/// destructor) still finds it; `Drain` gives the blocks back at exit.
struct Pool {
  void *blocks[kPoolClasses][kPoolDepth];
  unsigned count[kPoolClasses];
  size_t bytes;
  bool closed;
};
thread_local Pool pool = {};
/// Allocations served from the threads' pools (AllocatorStats::keptReused).
std::atomic<uint64_t> keptReused{0};

struct Drain {
  ~Drain() {
    for (size_t c = 0; c < kPoolClasses; ++c)
      for (unsigned i = 0; i < pool.count[c]; ++i)
        std::free(pool.blocks[c][i]);
    pool = {};
    pool.closed = true;
  }
};
thread_local Drain drain;

/// A kept block of class `c` (whose size is 2^(c + kPoolMinLog)), or null.
void *takePooled(int c) {
  if (pool.closed || pool.count[c] == 0)
    return nullptr;
  void *block = pool.blocks[c][--pool.count[c]];
  pool.bytes -= size_t(1) << (c + kPoolMinLog);
  keptReused.fetch_add(1, std::memory_order_relaxed);
  return block;
}

/// Keeps `block` of class `c`, or frees it when the pool is full.
void givePooled(void *block, int c) {
  size_t bytes = size_t(1) << (c + kPoolMinLog);
  if (pool.closed || pool.count[c] == kPoolDepth ||
      pool.bytes + bytes > kPoolBytes) {
    std::free(block);
    return;
  }
  (void)&drain; // constructs the thread's Drain, which empties the pool
  pool.blocks[c][pool.count[c]++] = block;
  pool.bytes += bytes;
}

bool validAlignment(size_t alignment) {
  return alignment && !(alignment & (alignment - 1)) && alignment <= kGranule;
}

/// Null for an invalid alignment or when memory runs out.
void *allocate(size_t alignment, size_t size) {
  if (!validAlignment(alignment))
    return nullptr;
  // The buffer starts `offset` bytes into its block; the header takes the
  // 64 bytes before it.
  size_t offset = std::max(alignment, kHeaderBytes);
  alignment = offset;
  if (size > SIZE_MAX - offset - kGranule)
    return nullptr;
  Header header;
  char *block;
  if (size + offset < kLargeBytes) {
    size_t bytes = roundUp(size + offset, alignment);
    int c = alignment == kHeaderBytes ? poolClass(bytes) : -1;
    if (c >= 0) {
      bytes = size_t(1) << (c + kPoolMinLog);
      block = static_cast<char *>(takePooled(c));
      if (!block)
        block = static_cast<char *>(std::aligned_alloc(alignment, bytes));
      if (!block)
        return nullptr;
      header = {kPooledMagic, bytes, block};
    } else {
      block = static_cast<char *>(std::aligned_alloc(alignment, bytes));
      if (!block)
        return nullptr;
      header = {kSmallMagic, bytes, block};
    }
  } else {
    size_t bytes = roundUp(size + offset, kGranule);
    block = static_cast<char *>(cache().take(bytes));
    if (!block)
      return nullptr;
    header = {kLargeMagic, bytes, block};
  }
  char *data = block + offset;
  new (data - kHeaderBytes) Header(header);
  if (header.magic == kLargeMagic)
    trackCallBuffer(data);
  return data;
}

/// Compiled code does not check for a null buffer: running out of memory
/// is a failed run-time check (Checks.h), returned to the caller that ran
/// the code through gptq_runtime_call_checked (the JIT, the C API, the
/// tools), with the large buffers of the call freed; inside a parallel
/// region, or without such a caller, one line and exit status 1. Never an
/// abort.
[[noreturn]] void outOfMemory(size_t size) {
  // Kept for the caller, which reads it on this thread.
  thread_local char message[192];
  std::snprintf(message, sizeof(message),
                "out of memory allocating a buffer of %zu bytes (%.1f GiB); "
                "free memory or use smaller inputs",
                size, double(size) / double(size_t(1) << 30));
  gptq_runtime_check_failed(message,
                            mlir::gptq::runtime::inParallelRegion() ? 1 : 0);
}

} // namespace

extern "C" void *_mlir_memref_to_llvm_alloc(size_t size) {
  void *p = allocate(kHeaderBytes, size);
  if (!p)
    outOfMemory(size);
  return p;
}

extern "C" void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment,
                                                    size_t size) {
  // An invalid alignment (not a power of two, or over 2 MiB) gives null.
  void *p = allocate(alignment, size);
  if (!p && validAlignment(alignment))
    outOfMemory(size);
  return p;
}

extern "C" void _mlir_memref_to_llvm_free(void *ptr) {
  if (!ptr)
    return;
  auto *header =
      reinterpret_cast<Header *>(static_cast<char *>(ptr) - kHeaderBytes);
  switch (header->magic) {
  case kSmallMagic:
    header->magic = 0;
    std::free(header->block);
    return;
  case kPooledMagic:
    header->magic = 0;
    givePooled(header->block, poolClass(header->blockBytes));
    return;
  case kLargeMagic:
    header->magic = 0;
    untrackCallBuffer(ptr);
    cache().give(header->block, header->blockBytes);
    return;
  default:
    // A pointer this allocator did not hand out, or one freed twice.
    std::fprintf(stderr,
                 "gptq-mlir runtime: free of a buffer that was not "
                 "allocated by the runtime (%p)\n",
                 ptr);
    std::abort();
  }
}

namespace mlir::gptq::runtime {

AllocatorStats allocatorStats() {
  AllocatorStats stats = cache().snapshot();
  stats.keptReused = keptReused.load(std::memory_order_relaxed);
  return stats;
}

void releaseCachedBuffers() { cache().releaseAll(); }

void endCheckedCall(uint64_t call, bool failed) {
  if (callBufferCount.load() == 0)
    return;
  std::vector<void *> live;
  {
    std::lock_guard<std::mutex> lock(callBuffersMutex);
    auto &buffers = callBuffers();
    for (auto it = buffers.begin(); it != buffers.end();) {
      if (it->second != call) {
        ++it;
        continue;
      }
      live.push_back(it->first);
      it = buffers.erase(it);
    }
    callBufferCount.store(buffers.size());
  }
  if (!failed)
    return;
  for (void *data : live) {
    auto *header =
        reinterpret_cast<Header *>(static_cast<char *>(data) - kHeaderBytes);
    if (header->magic != kLargeMagic)
      continue;
    header->magic = 0;
    cache().give(header->block, header->blockBytes);
  }
}

} // namespace mlir::gptq::runtime
