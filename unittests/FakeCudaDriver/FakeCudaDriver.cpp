//===- FakeCudaDriver.cpp - A CUDA driver library for runtime tests -------===//
//
// The driver API entry points that the CUDA runtime library resolves, on
// host memory: one device ("Fake GPU", sm_90, 1 GiB), allocations from
// malloc up to a capacity that tests set, streams and events as counters.
// Modules never load (there is nothing to run kernels on). Tests load it
// through GPTQ_CUDA_DRIVER and read what the runtime asked for through
// fake_cuda_counts.
//
//===----------------------------------------------------------------------===//

#include "FakeCudaDriver.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace {
using CUresult = int;
constexpr CUresult kSuccess = 0;
constexpr CUresult kOutOfMemory = 2;
constexpr CUresult kInvalidValue = 1;
constexpr CUresult kInvalidImage = 200;

std::mutex mutex;
FakeCudaCounts counts;
std::unordered_map<unsigned long long, size_t> sizes;
uint64_t capacity = UINT64_MAX;
int context;
int event;

CUresult allocate(unsigned long long *ptr, size_t bytes, uint64_t &counter) {
  std::lock_guard<std::mutex> lock(mutex);
  if (bytes > capacity || counts.liveBytes > capacity - bytes)
    return kOutOfMemory;
  void *memory = std::malloc(bytes);
  if (!memory)
    return kOutOfMemory;
  *ptr = reinterpret_cast<unsigned long long>(memory);
  sizes[*ptr] = bytes;
  counts.liveBytes += bytes;
  ++counter;
  return kSuccess;
}
} // namespace

extern "C" {
FakeCudaCounts fake_cuda_counts() {
  std::lock_guard<std::mutex> lock(mutex);
  return counts;
}
void fake_cuda_set_capacity(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex);
  capacity = bytes;
}

CUresult cuInit(unsigned) { return kSuccess; }
CUresult cuGetErrorName(CUresult result, const char **name) {
  *name = result == kOutOfMemory   ? "CUDA_ERROR_OUT_OF_MEMORY"
          : result == kInvalidImage ? "CUDA_ERROR_INVALID_IMAGE"
                                    : "CUDA_ERROR_INVALID_VALUE";
  return kSuccess;
}
CUresult cuDeviceGetCount(int *count) {
  *count = 1;
  return kSuccess;
}
CUresult cuDeviceGet(int *device, int ordinal) {
  *device = ordinal;
  return ordinal == 0 ? kSuccess : kInvalidValue;
}
CUresult cuDeviceGetName(char *name, int length, int) {
  std::strncpy(name, "Fake GPU", length);
  return kSuccess;
}
CUresult cuDeviceGetAttribute(int *value, int attribute, int) {
  *value = attribute == 75 ? 9 : 0; // compute capability 9.0
  return kSuccess;
}
CUresult cuDeviceTotalMem_v2(size_t *bytes, int) {
  *bytes = size_t(1) << 30;
  return kSuccess;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, int) {
  *ctx = &context;
  return kSuccess;
}
CUresult cuCtxGetCurrent(void **ctx) {
  *ctx = &context;
  return kSuccess;
}
CUresult cuCtxSetCurrent(void *) { return kSuccess; }
CUresult cuCtxSetLimit(int, size_t) { return kSuccess; }
CUresult cuCtxSynchronize() {
  std::lock_guard<std::mutex> lock(mutex);
  ++counts.synchronizations;
  return kSuccess;
}
CUresult cuModuleLoadData(void **, const void *) { return kInvalidImage; }
CUresult cuModuleLoadDataEx(void **, const void *, unsigned, int *, void **) {
  return kInvalidImage;
}
CUresult cuModuleUnload(void *) { return kSuccess; }
CUresult cuModuleGetFunction(void **, void *, const char *) {
  return kInvalidValue;
}
CUresult cuFuncSetAttribute(void *, int, int) { return kSuccess; }
CUresult cuLaunchKernel(void *, unsigned, unsigned, unsigned, unsigned,
                        unsigned, unsigned, unsigned, void *, void **,
                        void **) {
  return kInvalidValue;
}
CUresult cuStreamCreate(void **s, unsigned) {
  std::lock_guard<std::mutex> lock(mutex);
  ++counts.streamsCreated;
  *s = new int(0);
  return kSuccess;
}
CUresult cuStreamDestroy_v2(void *s) {
  std::lock_guard<std::mutex> lock(mutex);
  ++counts.streamsDestroyed;
  delete static_cast<int *>(s);
  return kSuccess;
}
CUresult cuStreamSynchronize(void *) { return kSuccess; }
CUresult cuStreamWaitEvent(void *, void *, unsigned) { return kSuccess; }
CUresult cuEventCreate(void **e, unsigned) {
  *e = &event;
  return kSuccess;
}
CUresult cuEventDestroy_v2(void *) { return kSuccess; }
CUresult cuEventSynchronize(void *) { return kSuccess; }
CUresult cuEventRecord(void *, void *) { return kSuccess; }
CUresult cuMemAlloc_v2(unsigned long long *ptr, size_t bytes) {
  return allocate(ptr, bytes, counts.deviceAllocations);
}
CUresult cuMemAllocManaged(unsigned long long *ptr, size_t bytes, unsigned) {
  return allocate(ptr, bytes, counts.managedAllocations);
}
CUresult cuMemFree_v2(unsigned long long ptr) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = sizes.find(ptr);
  if (it == sizes.end())
    return kInvalidValue;
  counts.liveBytes -= it->second;
  sizes.erase(it);
  std::free(reinterpret_cast<void *>(ptr));
  ++counts.frees;
  return kSuccess;
}
CUresult cuMemcpyAsync(unsigned long long dst, unsigned long long src,
                       size_t bytes, void *) {
  std::memcpy(reinterpret_cast<void *>(dst), reinterpret_cast<void *>(src),
              bytes);
  return kSuccess;
}
CUresult cuMemsetD32Async(unsigned long long dst, unsigned value,
                          size_t count, void *) {
  auto *words = reinterpret_cast<unsigned *>(dst);
  for (size_t i = 0; i < count; ++i)
    words[i] = value;
  return kSuccess;
}
CUresult cuMemsetD16Async(unsigned long long dst, unsigned short value,
                          size_t count, void *) {
  auto *words = reinterpret_cast<unsigned short *>(dst);
  for (size_t i = 0; i < count; ++i)
    words[i] = value;
  return kSuccess;
}
CUresult cuMemHostRegister_v2(void *, size_t, unsigned) { return kSuccess; }
CUresult cuMemHostUnregister(void *) { return kSuccess; }
}
