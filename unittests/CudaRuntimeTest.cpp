//===- CudaRuntimeTest.cpp - The CUDA runtime library ---------------------===//
//
// Most tests hold with and without a CUDA device: without one, every call
// must fail as a run-time check with the probe's reason. Only the kernel
// round trip needs a device.
//
//===----------------------------------------------------------------------===//

#include "gptq/Runtime/CudaRuntime.h"
#include "gptq/Runtime/Checks.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <string>
#include <vector>

using namespace mlir::gptq::runtime;

namespace {

/// Whether a device is usable, and the probe's message.
bool probe(std::string &message) {
  char text[512];
  int status = gptq_cuda_probe(text, sizeof(text));
  message = text;
  return status == 0;
}

bool startsWith(const std::string &text, const std::string &prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool driverLoads() {
  void *handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (handle)
    dlclose(handle);
  return handle;
}

TEST(CudaRuntimeTest, ProbeNamesTheDeviceOrWhyThereIsNone) {
  std::string message;
  bool usable = probe(message);
  if (!driverLoads()) {
    EXPECT_FALSE(usable);
    EXPECT_TRUE(startsWith(message, "cuda: cannot load the CUDA driver "
                                    "(libcuda.so.1): libcuda.so.1: "))
        << message;
    EXPECT_TRUE(endsWith(message, "; a CUDA device and its driver are needed "
                                  "for --device cuda"))
        << message;
  } else if (usable) {
    // "NVIDIA H200, sm_90, 139 GiB"
    EXPECT_NE(message.find(", sm_"), std::string::npos) << message;
    EXPECT_TRUE(endsWith(message, " GiB")) << message;
  } else {
    EXPECT_TRUE(startsWith(message, "cuda: ")) << message;
  }
}

TEST(CudaRuntimeTest, ProbeTruncatesToTheCapacity) {
  std::string message;
  probe(message);
  char small[8];
  gptq_cuda_probe(small, sizeof(small));
  EXPECT_EQ(std::string(small), message.substr(0, sizeof(small) - 1));
  EXPECT_EQ(gptq_cuda_probe(nullptr, 0) == 0, probe(message));
}

TEST(CudaRuntimeTest, FailedCallsReturnToTheCheckedCaller) {
  std::string reason;
  bool usable = probe(reason);
  void *stream = nullptr;
  void *args[] = {&stream};
  const char *message = gptq_runtime_call_checked(
      [](void **args) { *static_cast<void **>(args[0]) = mgpuStreamCreate(); },
      args);
  if (!usable) {
    ASSERT_NE(message, nullptr);
    EXPECT_EQ(std::string(message), reason);
    return;
  }
  ASSERT_EQ(message, nullptr) << message;
  EXPECT_NE(stream, nullptr);
  mgpuStreamDestroy(stream);
}

/// An image that is neither ELF nor fatbin nor PTX.
constexpr char kBadImage[] = "\x7f"
                             "not a module";

/// Loading is deferred to the first lookup, which fails: the module is
/// unloaded again (it never reached the driver).
void loadBadImage(void **) {
  void *module = mgpuModuleLoad(const_cast<char *>(kBadImage), 0);
  mgpuModuleGetFunction(module, "f");
}

TEST(CudaRuntimeTest, ModulesLoadOnFirstUseSoStartingNeedsNoDriver) {
  // No driver call: this succeeds with or without a GPU.
  const char *message = gptq_runtime_call_checked(
      [](void **) {
        void *module = mgpuModuleLoad(const_cast<char *>(kBadImage), 0);
        void *jit = mgpuModuleLoadJIT(const_cast<char *>(kBadImage), 2);
        mgpuModuleUnload(module);
        mgpuModuleUnload(jit);
      },
      nullptr);
  EXPECT_EQ(message, nullptr) << message;
}

TEST(CudaRuntimeTest, FailedDriverCallsNameTheCallAndTheError) {
  std::string reason;
  bool usable = probe(reason);
  const char *message = gptq_runtime_call_checked(loadBadImage, nullptr);
  ASSERT_NE(message, nullptr);
  if (usable)
    EXPECT_TRUE(
        startsWith(message, "cuda: cuModuleLoadData failed: CUDA_ERROR_") &&
        endsWith(message, " (device 0)"))
        << message;
  else
    EXPECT_EQ(std::string(message), reason);
}

TEST(CudaRuntimeDeathTest, FailureOutsideACheckedCallExitsWithStatus1) {
  // CUDA must not be used in a child forked after the parent initialized it.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(loadBadImage(nullptr), ::testing::ExitedWithCode(1),
              ": error: cuda: ");
}

TEST(CudaRuntimeTest, LaunchSizesThatDoNotFitAreRefused) {
  void *args[] = {nullptr};
  const char *message = gptq_runtime_call_checked(
      [](void **) {
        mgpuLaunchKernel(nullptr, intptr_t(1) << 32, 1, 1, 32, 1, 1, 0, nullptr,
                         nullptr, nullptr, 0);
      },
      args);
  ASSERT_NE(message, nullptr);
  EXPECT_STREQ(message, "cuda: cannot launch a kernel with a grid of "
                        "4294967296 x 1 x 1 blocks of 32 x 1 x 1 threads");
  message = gptq_runtime_call_checked(
      [](void **) {
        mgpuLaunchKernel(nullptr, 1, 1, 1, 0, 1, 1, 0, nullptr, nullptr,
                         nullptr, 0);
      },
      args);
  ASSERT_NE(message, nullptr);
  EXPECT_STREQ(message, "cuda: cannot launch a kernel with a grid of 1 x 1 x "
                        "1 blocks of 0 x 1 x 1 threads");
}

TEST(CudaRuntimeTest, GridsWithoutBlocksLaunchNothing) {
  // No driver call: this succeeds with or without a GPU.
  const char *message = gptq_runtime_call_checked(
      [](void **) {
        mgpuLaunchKernel(nullptr, 0, 1, 1, 32, 1, 1, 0, nullptr, nullptr,
                         nullptr, 0);
        mgpuLaunchKernel(nullptr, 4, 1, 0, 32, 8, 1, 0, nullptr, nullptr,
                         nullptr, 0);
      },
      nullptr);
  EXPECT_EQ(message, nullptr) << message;
}

TEST(CudaRuntimeTest, EmptyAllocationsNeedNoDevice) {
  void *ptr = &ptr;
  void *args[] = {&ptr};
  const char *message = gptq_runtime_call_checked(
      [](void **args) {
        void *&ptr = *static_cast<void **>(args[0]);
        ptr = mgpuMemAlloc(0, nullptr, false);
        mgpuMemFree(ptr, nullptr);
      },
      args);
  EXPECT_EQ(message, nullptr);
  EXPECT_EQ(ptr, nullptr);
}

/// A memref descriptor of rank `Rank`, as the lowering passes it.
template <int Rank>
struct Descriptor {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes[Rank];
  int64_t strides[Rank];
};

TEST(CudaRuntimeTest, MemRefSpanOfAContiguousMemRef) {
  alignas(8) char buffer[256];
  Descriptor<2> desc{buffer, buffer + 8, 5, {3, 4}, {4, 1}};
  MemRefSpan span;
  ASSERT_TRUE(getMemRefSpan(2, &desc, 4, span));
  EXPECT_EQ(span.begin, buffer + 8 + 5 * 4);
  EXPECT_EQ(span.bytes, 12u * 4);
}

TEST(CudaRuntimeTest, MemRefSpanOfAStridedMemRefEndsAtItsLastElement) {
  Descriptor<2> desc{
      nullptr, reinterpret_cast<void *>(0x1000), 0, {3, 4}, {8, 2}};
  MemRefSpan span;
  ASSERT_TRUE(getMemRefSpan(2, &desc, 2, span));
  EXPECT_EQ(span.begin, reinterpret_cast<void *>(0x1000));
  // The last element is at 2 * 8 + 3 * 2.
  EXPECT_EQ(span.bytes, (2u * 8 + 3 * 2 + 1) * 2);
}

TEST(CudaRuntimeTest, MemRefSpanOfANegativeStrideStartsAtItsLowestElement) {
  // A reversed view of 4 floats: element i at offset 3 - i.
  Descriptor<1> desc{nullptr, reinterpret_cast<void *>(0x1000), 3, {4}, {-1}};
  MemRefSpan span;
  ASSERT_TRUE(getMemRefSpan(1, &desc, 4, span));
  EXPECT_EQ(span.begin, reinterpret_cast<void *>(0x1000));
  EXPECT_EQ(span.bytes, 16u);
}

TEST(CudaRuntimeTest, MemRefSpanOfRank0AndEmptyMemRefs) {
  Descriptor<1> scalar{nullptr, reinterpret_cast<void *>(0x1000), 2, {}, {}};
  MemRefSpan span;
  ASSERT_TRUE(getMemRefSpan(0, &scalar, 8, span));
  EXPECT_EQ(span.begin, reinterpret_cast<void *>(0x1010));
  EXPECT_EQ(span.bytes, 8u);
  Descriptor<2> empty{
      nullptr, reinterpret_cast<void *>(0x1000), 0, {3, 0}, {0, 1}};
  ASSERT_TRUE(getMemRefSpan(2, &empty, 4, span));
  EXPECT_EQ(span.bytes, 0u);
}

TEST(CudaRuntimeTest, MemRefSpanThatOverflowsIsRefused) {
  Descriptor<2> huge{nullptr, nullptr, 0, {INT64_MAX, 3}, {4, INT64_MAX}};
  MemRefSpan span;
  EXPECT_FALSE(getMemRefSpan(2, &huge, 4, span));
  Descriptor<1> negative{nullptr, nullptr, 0, {-1}, {1}};
  EXPECT_FALSE(getMemRefSpan(1, &negative, 4, span));
}

TEST(CudaRuntimeTest, RegisteringAnEmptyMemRefNeedsNoDevice) {
  Descriptor<1> empty{nullptr, nullptr, 0, {0}, {1}};
  void *args[] = {&empty};
  const char *message = gptq_runtime_call_checked(
      [](void **args) {
        mgpuMemHostRegisterMemRef(1, args[0], 4);
        mgpuMemHostUnregisterMemRef(1, args[0], 4);
      },
      args);
  EXPECT_EQ(message, nullptr);
}

// out[i] = value + i, for the global thread index i.
constexpr const char *kFillPtx = R"ptx(
.version 7.8
.target sm_75
.address_size 64

.visible .entry fill(.param .u64 out, .param .u32 value)
{
  .reg .b32 %r<6>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [value];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mad.lo.s32 %r5, %r3, %r4, %r2;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r5, 4;
  add.s64 %rd2, %rd2, %rd3;
  add.s32 %r1, %r1, %r5;
  st.global.u32 [%rd2], %r1;
  ret;
}
)ptx";

/// Fills a buffer of 1024 words (the last 512 on a second stream after an
/// event), copies it into registered host memory and checks it.
void roundTrip(void **args) {
  auto &host = *static_cast<std::vector<uint32_t> *>(args[0]);
  void *module = mgpuModuleLoadJIT(const_cast<char *>(kFillPtx), 2);
  void *fill = mgpuModuleGetFunction(module, "fill");
  void *stream = mgpuStreamCreate();
  void *other = mgpuStreamCreate();
  void *event = mgpuEventCreate();
  size_t bytes = host.size() * sizeof(uint32_t);
  void *device = mgpuMemAlloc(bytes, stream, false);
  mgpuMemset32(device, 7, host.size(), stream);
  uint32_t value = 100;
  void *params[] = {&device, &value};
  // Above 48 KiB of shared memory the function's limit must be raised.
  mgpuLaunchKernel(fill, 2, 1, 1, 256, 1, 1, 64 << 10, stream, params, nullptr,
                   2);
  mgpuEventRecord(event, stream);
  mgpuStreamWaitEvent(other, event);
  void *upper = static_cast<uint32_t *>(device) + 512;
  mgpuMemset16(upper, 0x0101, 2 * 512, other);
  Descriptor<1> desc{
      host.data(), host.data(), 0, {static_cast<int64_t>(host.size())}, {1}};
  mgpuMemHostRegisterMemRef(1, &desc, sizeof(uint32_t));
  mgpuMemcpy(host.data(), device, bytes, other);
  mgpuStreamSynchronize(other);
  mgpuEventSynchronize(event);
  mgpuMemHostUnregisterMemRef(1, &desc, sizeof(uint32_t));
  mgpuMemFree(device, stream);
  mgpuEventDestroy(event);
  mgpuStreamDestroy(other);
  mgpuStreamDestroy(stream);
  mgpuModuleUnload(module);
}

TEST(CudaRuntimeTest, KernelRoundTrip) {
  std::string reason;
  if (!probe(reason))
    GTEST_SKIP() << reason;
  std::vector<uint32_t> host(1024, 0);
  void *args[] = {&host};
  const char *message = gptq_runtime_call_checked(roundTrip, args);
  ASSERT_EQ(message, nullptr) << message;
  for (size_t i = 0; i < 512; ++i)
    ASSERT_EQ(host[i], 100 + i) << "at " << i;
  for (size_t i = 512; i < host.size(); ++i)
    ASSERT_EQ(host[i], 0x01010101u) << "at " << i;
}

} // namespace
