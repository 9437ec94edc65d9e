//===- CudaRuntimeCacheTest.cpp - Streams and memory kept for reuse -------===//
//
// The CUDA runtime library against the fake driver of FakeCudaDriver/
// (loaded through GPTQ_CUDA_DRIVER), which counts what the library asks of
// the driver: freed memory and destroyed streams must be reused, not
// returned to the driver. Each test starts with an empty cache, so that the
// tests hold in any order within one process.
//
//===----------------------------------------------------------------------===//

#include "FakeCudaDriver/FakeCudaDriver.h"
#include "gptq/Runtime/Checks.h"
#include "gptq/Runtime/CudaRuntime.h"

#include <cstdlib>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <string>

namespace {

// Before any test, so before the runtime first loads a driver.
const int driverChosen = setenv("GPTQ_CUDA_DRIVER", GPTQ_FAKE_CUDA_DRIVER, 1);

void *fakeDriver() {
  static void *handle =
      dlopen(GPTQ_FAKE_CUDA_DRIVER, RTLD_NOW | RTLD_LOCAL);
  return handle;
}

FakeCudaCounts counts() {
  auto fn = reinterpret_cast<FakeCudaCountsFn>(
      dlsym(fakeDriver(), "fake_cuda_counts"));
  return fn();
}

void setCapacity(uint64_t bytes) {
  reinterpret_cast<FakeCudaSetCapacityFn>(
      dlsym(fakeDriver(), "fake_cuda_set_capacity"))(bytes);
}

class CudaRuntimeCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(gptq_runtime_call_checked(
                  [](void **) { gptq_cuda_release_cached_memory(); }, nullptr),
              nullptr);
    ASSERT_EQ(gptq_cuda_cache_stats().idleBytes, 0u);
  }
};

TEST_F(CudaRuntimeCacheTest, TheDriverComesFromTheEnvironment) {
  ASSERT_EQ(driverChosen, 0);
  ASSERT_NE(fakeDriver(), nullptr) << dlerror();
  char text[512];
  ASSERT_EQ(gptq_cuda_probe(text, sizeof(text)), 0) << text;
  EXPECT_STREQ(text, "Fake GPU, sm_90, 1 GiB");
}

TEST_F(CudaRuntimeCacheTest, FreedMemoryServesTheNextAllocation) {
  FakeCudaCounts before = counts();
  void *a = mgpuMemAlloc(3000, nullptr, /*isHostShared=*/true);
  ASSERT_NE(a, nullptr);
  mgpuMemFree(a, nullptr);
  // 3000 and 2100 bytes are both in the 4 KiB class.
  void *b = mgpuMemAlloc(2100, nullptr, /*isHostShared=*/true);
  EXPECT_EQ(b, a);
  FakeCudaCounts after = counts();
  EXPECT_EQ(after.managedAllocations - before.managedAllocations, 1u);
  EXPECT_EQ(after.frees, before.frees);
  // Freeing waits for the device, as cuMemFree would.
  EXPECT_EQ(after.synchronizations - before.synchronizations, 1u);
  mgpuMemFree(b, nullptr);
}

TEST_F(CudaRuntimeCacheTest, ManagedAndDeviceMemoryAreKeptApart) {
  FakeCudaCounts before = counts();
  void *managed = mgpuMemAlloc(7000, nullptr, /*isHostShared=*/true);
  mgpuMemFree(managed, nullptr);
  void *device = mgpuMemAlloc(7000, nullptr, /*isHostShared=*/false);
  EXPECT_NE(device, managed);
  FakeCudaCounts after = counts();
  EXPECT_EQ(after.managedAllocations - before.managedAllocations, 1u);
  EXPECT_EQ(after.deviceAllocations - before.deviceAllocations, 1u);
  mgpuMemFree(device, nullptr);
  void *again = mgpuMemAlloc(6000, nullptr, /*isHostShared=*/true);
  EXPECT_EQ(again, managed);
  mgpuMemFree(again, nullptr);
}

TEST_F(CudaRuntimeCacheTest, ABlockServesRequestsOfAtLeastHalfItsSize) {
  FakeCudaCounts before = counts();
  // The 64 KiB class.
  void *big = mgpuMemAlloc(40000, nullptr, /*isHostShared=*/true);
  mgpuMemFree(big, nullptr);
  // 10000 bytes are the 16 KiB class: a quarter of the block, too small.
  void *small = mgpuMemAlloc(10000, nullptr, /*isHostShared=*/true);
  EXPECT_NE(small, big);
  // 20000 bytes are the 32 KiB class: half of it.
  void *half = mgpuMemAlloc(20000, nullptr, /*isHostShared=*/true);
  EXPECT_EQ(half, big);
  EXPECT_EQ(counts().managedAllocations - before.managedAllocations, 2u);
  mgpuMemFree(small, nullptr);
  mgpuMemFree(half, nullptr);
}

TEST_F(CudaRuntimeCacheTest, LargeBlocksComeInMultiplesOf2MiB) {
  FakeCudaCounts before = counts();
  void *a = mgpuMemAlloc(uint64_t(5) << 20, nullptr, /*isHostShared=*/true);
  EXPECT_EQ(counts().liveBytes - before.liveBytes, uint64_t(6) << 20);
  mgpuMemFree(a, nullptr);
  void *b = mgpuMemAlloc((uint64_t(9) << 19) + 1, nullptr, true); // 4.5 MiB
  EXPECT_EQ(b, a);
  mgpuMemFree(b, nullptr);
}

TEST_F(CudaRuntimeCacheTest, AFullDeviceGetsTheIdleBlocksBack) {
  // Fill the fake device with an idle block of one kind, then ask for the
  // other kind: the allocation fails once, the idle blocks go back to the
  // driver, and the second try succeeds.
  void *filler = mgpuMemAlloc(uint64_t(64) << 20, nullptr, /*isHostShared=*/
                              false);
  ASSERT_NE(filler, nullptr);
  mgpuMemFree(filler, nullptr);
  FakeCudaCounts before = counts();
  setCapacity(before.liveBytes + (uint64_t(32) << 20));
  void *result = nullptr;
  void *args[] = {&result};
  const char *message = gptq_runtime_call_checked(
      [](void **args) {
        *static_cast<void **>(args[0]) =
            mgpuMemAlloc(uint64_t(80) << 20, nullptr, /*isHostShared=*/true);
      },
      args);
  setCapacity(UINT64_MAX);
  ASSERT_EQ(message, nullptr) << message;
  FakeCudaCounts after = counts();
  EXPECT_GE(after.frees - before.frees, 1u);
  EXPECT_EQ(after.managedAllocations - before.managedAllocations, 1u);
  mgpuMemFree(result, nullptr);
}

TEST_F(CudaRuntimeCacheTest, ADeviceFullOfLiveMemoryFailsTheAllocation) {
  FakeCudaCounts before = counts();
  setCapacity(before.liveBytes);
  const char *message = gptq_runtime_call_checked(
      [](void **) { mgpuMemAlloc(uint64_t(200) << 20, nullptr, true); },
      nullptr);
  setCapacity(UINT64_MAX);
  ASSERT_NE(message, nullptr);
  EXPECT_STREQ(message, "cuda: cuMemAllocManaged failed: "
                        "CUDA_ERROR_OUT_OF_MEMORY (device 0)");
}

TEST_F(CudaRuntimeCacheTest, MemoryFromElsewhereGoesToTheDriver) {
  // cuMemFree of a pointer the driver does not know fails, naming it.
  int local = 0;
  void *args[] = {&local};
  const char *message = gptq_runtime_call_checked(
      [](void **args) { mgpuMemFree(args[0], nullptr); }, args);
  ASSERT_NE(message, nullptr);
  EXPECT_STREQ(message,
               "cuda: cuMemFree failed: CUDA_ERROR_INVALID_VALUE (device 0)");
}

TEST_F(CudaRuntimeCacheTest, DestroyedStreamsAreReused) {
  FakeCudaCounts before = counts();
  void *first = mgpuStreamCreate();
  void *second = mgpuStreamCreate();
  EXPECT_NE(first, second);
  mgpuStreamDestroy(first);
  mgpuStreamDestroy(second);
  for (int i = 0; i < 100; ++i) {
    void *stream = mgpuStreamCreate();
    EXPECT_TRUE(stream == first || stream == second);
    mgpuStreamDestroy(stream);
  }
  FakeCudaCounts after = counts();
  EXPECT_LE(after.streamsCreated - before.streamsCreated, 2u);
  EXPECT_EQ(after.streamsDestroyed, before.streamsDestroyed);
  EXPECT_GE(gptq_cuda_cache_stats().idleStreams, 2u);
}

TEST_F(CudaRuntimeCacheTest, StatsCountLiveAndIdleBlocks) {
  GPTQCudaCacheStats before = gptq_cuda_cache_stats();
  void *a = mgpuMemAlloc(uint64_t(11) << 20, nullptr, true); // 12 MiB class
  EXPECT_EQ(gptq_cuda_cache_stats().liveBlocks, before.liveBlocks + 1);
  mgpuMemFree(a, nullptr);
  GPTQCudaCacheStats idle = gptq_cuda_cache_stats();
  EXPECT_EQ(idle.liveBlocks, before.liveBlocks);
  EXPECT_EQ(idle.idleBytes - before.idleBytes, uint64_t(12) << 20);
  void *b = mgpuMemAlloc(uint64_t(11) << 20, nullptr, true);
  EXPECT_EQ(gptq_cuda_cache_stats().reused, idle.reused + 1);
  mgpuMemFree(b, nullptr);
}

} // namespace
