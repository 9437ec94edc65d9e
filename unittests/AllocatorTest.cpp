//===- AllocatorTest.cpp - The runtime's buffer allocator -----------------===//

#include "gptq/Runtime/Allocator.h"
#include "gptq/Runtime/Checks.h"

#include <cstdint>
#include <cstring>
#include <gtest/gtest.h>
#include <thread>

using namespace mlir::gptq::runtime;

namespace {

bool alignedTo(void *p, size_t alignment) {
  return reinterpret_cast<uintptr_t>(p) % alignment == 0;
}

TEST(AllocatorTest, SmallBuffersAreAlignedAndWritable) {
  for (size_t size : {size_t(0), size_t(1), size_t(63), size_t(4096)}) {
    void *p = _mlir_memref_to_llvm_alloc(size);
    ASSERT_NE(p, nullptr) << size;
    EXPECT_TRUE(alignedTo(p, 64)) << size;
    std::memset(p, 0xab, size);
    _mlir_memref_to_llvm_free(p);
  }
  void *q = _mlir_memref_to_llvm_aligned_alloc(256, 1000);
  ASSERT_NE(q, nullptr);
  EXPECT_TRUE(alignedTo(q, 256));
  _mlir_memref_to_llvm_free(q);
  _mlir_memref_to_llvm_free(nullptr);
}

TEST(AllocatorTest, LargeBuffersAreReused) {
  releaseCachedBuffers();
  AllocatorStats before = allocatorStats();
  const size_t bytes = size_t(24) << 20;
  auto *a = static_cast<float *>(_mlir_memref_to_llvm_alloc(bytes));
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(alignedTo(a, 64));
  a[0] = 1.0f;
  a[bytes / sizeof(float) - 1] = 2.0f;
  _mlir_memref_to_llvm_free(a);
  EXPECT_GE(allocatorStats().cachedBytes, bytes);

  // A buffer of a similar size takes the cached block; a much smaller one
  // (under half) does not.
  void *b = _mlir_memref_to_llvm_alloc(bytes - 4096);
  EXPECT_EQ(b, a);
  void *c = _mlir_memref_to_llvm_alloc(size_t(4) << 20);
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c, a);
  AllocatorStats during = allocatorStats();
  EXPECT_EQ(during.largeAllocations - before.largeAllocations, 3u);
  EXPECT_EQ(during.largeReused - before.largeReused, 1u);
  _mlir_memref_to_llvm_free(b);
  _mlir_memref_to_llvm_free(c);

  releaseCachedBuffers();
  AllocatorStats after = allocatorStats();
  EXPECT_EQ(after.cachedBytes, 0u);
  EXPECT_EQ(after.mappedBytes, before.mappedBytes);
}

TEST(AllocatorTest, MidSizeBuffersAreKeptByTheirThread) {
  // A freed buffer of 1 KiB - 1 MiB is handed out again to the next
  // allocation of its size class on the same thread, not to another
  // thread's.
  void *a = _mlir_memref_to_llvm_alloc(5000);
  ASSERT_NE(a, nullptr);
  uint64_t before = allocatorStats().keptReused;
  std::memset(a, 1, 5000);
  _mlir_memref_to_llvm_free(a);
  void *other = nullptr;
  std::thread([&] {
    other = _mlir_memref_to_llvm_alloc(5000);
    std::memset(other, 2, 5000);
    _mlir_memref_to_llvm_free(other);
  }).join();
  EXPECT_NE(other, a);
  EXPECT_EQ(allocatorStats().keptReused, before);
  void *b = _mlir_memref_to_llvm_alloc(6000);
  EXPECT_EQ(b, a);
  EXPECT_EQ(allocatorStats().keptReused, before + 1);
  EXPECT_TRUE(alignedTo(b, 64));
  std::memset(b, 3, 6000);
  // Another class, and buffers aligned past 64 bytes or of at most 1 KiB,
  // are not kept.
  void *c = _mlir_memref_to_llvm_alloc(5000);
  void *d = _mlir_memref_to_llvm_aligned_alloc(256, 5000);
  void *e = _mlir_memref_to_llvm_alloc(500);
  EXPECT_NE(c, b);
  EXPECT_TRUE(alignedTo(d, 256));
  _mlir_memref_to_llvm_free(b);
  _mlir_memref_to_llvm_free(c);
  _mlir_memref_to_llvm_free(d);
  _mlir_memref_to_llvm_free(e);
  before = allocatorStats().keptReused;
  d = _mlir_memref_to_llvm_aligned_alloc(256, 5000);
  e = _mlir_memref_to_llvm_alloc(500);
  EXPECT_EQ(allocatorStats().keptReused, before);
  _mlir_memref_to_llvm_free(d);
  _mlir_memref_to_llvm_free(e);
  // 16 of a class are kept: 17 allocations after 17 frees take 16 of them.
  void *many[17];
  for (void *&p : many)
    p = _mlir_memref_to_llvm_alloc(100000);
  for (void *p : many)
    _mlir_memref_to_llvm_free(p);
  before = allocatorStats().keptReused;
  for (void *&p : many)
    p = _mlir_memref_to_llvm_alloc(100000);
  EXPECT_EQ(allocatorStats().keptReused, before + 16);
  for (void *p : many)
    _mlir_memref_to_llvm_free(p);
}

TEST(AllocatorTest, LargeAlignedBuffers) {
  void *p = _mlir_memref_to_llvm_aligned_alloc(4096, size_t(3) << 20);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(alignedTo(p, 4096));
  std::memset(p, 0, size_t(3) << 20);
  _mlir_memref_to_llvm_free(p);
  // Alignments that are not powers of two are refused.
  EXPECT_EQ(_mlir_memref_to_llvm_aligned_alloc(48, 100), nullptr);
}

TEST(AllocatorDeathTest, ForeignPointerIsReported) {
  EXPECT_DEATH(
      {
        // A buffer of the right size whose header is not the allocator's.
        alignas(64) static char buffer[256] = {};
        _mlir_memref_to_llvm_free(buffer + 128);
      },
      "not allocated by the runtime");
}

TEST(AllocatorDeathTest, OutOfMemoryIsReported) {
  // Compiled code does not check for null: an allocation that cannot be
  // served, with no caller to return to, ends the process with one line.
  EXPECT_EXIT(_mlir_memref_to_llvm_alloc(SIZE_MAX / 4),
              testing::ExitedWithCode(1),
              "error: out of memory allocating a buffer of");
}

/// Compiled code that allocates a large buffer, then one that cannot be
/// served; args[0] receives the first buffer's address.
void allocateTooMuch(void **args) {
  *static_cast<void **>(args[0]) = _mlir_memref_to_llvm_alloc(size_t(8) << 20);
  _mlir_memref_to_llvm_alloc(SIZE_MAX / 4);
  ADD_FAILURE() << "the allocation that cannot be served returned";
}

TEST(AllocatorTest, OutOfMemoryReturnsToTheCallerAndFreesTheCallsBuffers) {
  releaseCachedBuffers();
  AllocatorStats before = allocatorStats();
  void *first = nullptr;
  void *args[] = {&first};
  const char *message = gptq_runtime_call_checked(allocateTooMuch, args);
  ASSERT_NE(message, nullptr);
  EXPECT_NE(std::strstr(message, "out of memory allocating a buffer of"),
            nullptr)
      << message;
  EXPECT_NE(std::strstr(message, "GiB"), nullptr) << message;
  ASSERT_NE(first, nullptr);
  // The call's live buffer went back to the cache, not leaked.
  AllocatorStats after = allocatorStats();
  EXPECT_GE(after.cachedBytes, uint64_t(8) << 20);
  EXPECT_EQ(after.mappedBytes - after.cachedBytes,
            before.mappedBytes - before.cachedBytes);
  releaseCachedBuffers();
}

/// Compiled code whose large buffer is its result.
void allocateResult(void **args) {
  *static_cast<void **>(args[0]) = _mlir_memref_to_llvm_alloc(size_t(8) << 20);
}

TEST(AllocatorTest, ASucceedingCallKeepsItsBuffers) {
  releaseCachedBuffers();
  uint64_t mappedBefore = allocatorStats().mappedBytes;
  void *result = nullptr;
  void *args[] = {&result};
  ASSERT_EQ(gptq_runtime_call_checked(allocateResult, args), nullptr);
  ASSERT_NE(result, nullptr);
  EXPECT_EQ(allocatorStats().cachedBytes, 0u);
  // A failing call later frees only its own buffers.
  void *other = nullptr;
  void *failing[] = {&other};
  ASSERT_NE(gptq_runtime_call_checked(allocateTooMuch, failing), nullptr);
  std::memset(result, 1, size_t(8) << 20);
  _mlir_memref_to_llvm_free(result);
  releaseCachedBuffers();
  EXPECT_EQ(allocatorStats().mappedBytes, mappedBefore);
}

} // namespace
