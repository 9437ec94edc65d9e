//===- CudaRuntime.cpp - CUDA runtime of compiled GPU code ----------------===//
//
// The driver is loaded and initialized once, under std::call_once, and each
// device's primary context is retained once, under a flag of its own. A
// failure inside either is only recorded there and reported after call_once
// has returned: a failed check jumps back to gptq_runtime_call_checked, and a
// jump out of call_once (or out of any frame with destructors) would leave
// it locked. For the same reason the reporting frames hold no objects with
// destructors, and messages are formatted into buffers that outlive them.
//
//===----------------------------------------------------------------------===//

#include "gptq/Runtime/CudaRuntime.h"
#include "gptq/Runtime/Checks.h"
#include "gptq/Runtime/LaunchCount.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <initializer_list>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace {

// The driver API's types and constants, as cuda.h declares them, so that
// the library builds without the CUDA toolkit.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;

constexpr CUresult kSuccess = 0;
constexpr CUresult kErrorOutOfMemory = 2;
constexpr CUresult kErrorStubLibrary = 34;
constexpr int kAttributeComputeCapabilityMajor = 75;
constexpr int kAttributeComputeCapabilityMinor = 76;
constexpr int kFuncAttributeMaxDynamicSharedSizeBytes = 8;
constexpr int kJitErrorLogBuffer = 5;
constexpr int kJitErrorLogBufferSizeBytes = 6;
constexpr int kJitOptimizationLevel = 7;
constexpr unsigned kMemAttachGlobal = 1;
constexpr unsigned kMemHostRegisterPortable = 1;
constexpr unsigned kStreamDefault = 0;
constexpr unsigned kEventDisableTiming = 2;

/// Dynamic shared memory that a launch may use without raising the limit.
constexpr int32_t kDefaultSharedBytes = 48 << 10;
/// CU_LIMIT_MALLOC_HEAP_SIZE, and the device heap this runtime asks for,
/// over the driver's default 8 MiB, for kernels that call malloc (those of
/// the gptq lowering no longer do; hand-written GPU code may).
constexpr int kLimitMallocHeapSize = 2;
constexpr size_t kDeviceHeapBytes = size_t(256) << 20;

constexpr const char *kNeeded =
    "a CUDA device and its driver are needed for --device cuda";

/// A device's primary context, retained on first use.
struct DeviceContext {
  std::once_flag once;
  CUcontext context = nullptr;
  CUresult result = kSuccess;
  const char *call = nullptr; ///< the call that failed, if any
};

/// The driver's entry points (the names libcuda.so.1 exports) and state.
struct Driver {
  CUresult (*init)(unsigned);
  CUresult (*getErrorName)(CUresult, const char **);
  CUresult (*deviceGetCount)(int *);
  CUresult (*deviceGet)(CUdevice *, int);
  CUresult (*deviceGetName)(char *, int, CUdevice);
  CUresult (*deviceGetAttribute)(int *, int, CUdevice);
  CUresult (*deviceTotalMem)(size_t *, CUdevice);
  CUresult (*primaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*ctxGetCurrent)(CUcontext *);
  CUresult (*ctxSetCurrent)(CUcontext);
  CUresult (*ctxSetLimit)(int, size_t);
  CUresult (*ctxSynchronize)();
  CUresult (*moduleLoadData)(CUmodule *, const void *);
  CUresult (*moduleLoadDataEx)(CUmodule *, const void *, unsigned, int *,
                               void **);
  CUresult (*moduleUnload)(CUmodule);
  CUresult (*moduleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*funcSetAttribute)(CUfunction, int, int);
  CUresult (*launchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                           unsigned, unsigned, unsigned, CUstream, void **,
                           void **);
  CUresult (*streamCreate)(CUstream *, unsigned);
  CUresult (*streamDestroy)(CUstream);
  CUresult (*streamSynchronize)(CUstream);
  CUresult (*streamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*eventCreate)(CUevent *, unsigned);
  CUresult (*eventDestroy)(CUevent);
  CUresult (*eventSynchronize)(CUevent);
  CUresult (*eventRecord)(CUevent, CUstream);
  CUresult (*memAlloc)(CUdeviceptr *, size_t);
  CUresult (*memAllocManaged)(CUdeviceptr *, size_t, unsigned);
  CUresult (*memFree)(CUdeviceptr);
  CUresult (*memcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*memsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
  CUresult (*memsetD16Async)(CUdeviceptr, unsigned short, size_t, CUstream);
  CUresult (*memHostRegister)(void *, size_t, unsigned);
  CUresult (*memHostUnregister)(void *);

  int deviceCount = 0;
  /// One per device; never freed, as the contexts are held until exit.
  DeviceContext *contexts = nullptr;
  /// Why the driver cannot be used; empty when it can.
  char error[512] = {};
};

std::atomic<int32_t> defaultDevice{0};

/// The message of the last failure on this thread.
thread_local char failure[2048];

/// The driver's name of `result`, written into `buffer` when it has none.
const char *errorName(const Driver &driver, CUresult result,
                      char (&buffer)[32]) {
  const char *name = nullptr;
  if (driver.getErrorName && driver.getErrorName(result, &name) == kSuccess &&
      name)
    return name;
  // The toolkit's stub library fails every call, naming errors included.
  if (result == kErrorStubLibrary)
    return "CUDA_ERROR_STUB_LIBRARY (libcuda.so.1 is the CUDA toolkit's stub, "
           "not a driver)";
  std::snprintf(buffer, sizeof(buffer), "CUDA error %d", result);
  return buffer;
}

void load(Driver &driver) {
  const char *library = std::getenv("GPTQ_CUDA_DRIVER");
  if (!library || !*library)
    library = "libcuda.so.1";
  void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    std::snprintf(driver.error, sizeof(driver.error),
                  "cuda: cannot load the CUDA driver (%s): %s; %s", library,
                  dlerror(), kNeeded);
    return;
  }
  const char *missing = nullptr;
  auto resolve = [&](auto &fn, const char *name) {
    if (missing)
      return;
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
        dlsym(handle, name));
    if (!fn)
      missing = name;
  };
  resolve(driver.init, "cuInit");
  resolve(driver.deviceGetCount, "cuDeviceGetCount");
  resolve(driver.deviceGet, "cuDeviceGet");
  resolve(driver.deviceGetName, "cuDeviceGetName");
  resolve(driver.deviceGetAttribute, "cuDeviceGetAttribute");
  resolve(driver.deviceTotalMem, "cuDeviceTotalMem_v2");
  resolve(driver.primaryCtxRetain, "cuDevicePrimaryCtxRetain");
  resolve(driver.ctxGetCurrent, "cuCtxGetCurrent");
  resolve(driver.ctxSetCurrent, "cuCtxSetCurrent");
  resolve(driver.ctxSetLimit, "cuCtxSetLimit");
  resolve(driver.ctxSynchronize, "cuCtxSynchronize");
  resolve(driver.moduleLoadData, "cuModuleLoadData");
  resolve(driver.moduleLoadDataEx, "cuModuleLoadDataEx");
  resolve(driver.moduleUnload, "cuModuleUnload");
  resolve(driver.moduleGetFunction, "cuModuleGetFunction");
  resolve(driver.funcSetAttribute, "cuFuncSetAttribute");
  resolve(driver.launchKernel, "cuLaunchKernel");
  resolve(driver.streamCreate, "cuStreamCreate");
  resolve(driver.streamDestroy, "cuStreamDestroy_v2");
  resolve(driver.streamSynchronize, "cuStreamSynchronize");
  resolve(driver.streamWaitEvent, "cuStreamWaitEvent");
  resolve(driver.eventCreate, "cuEventCreate");
  resolve(driver.eventDestroy, "cuEventDestroy_v2");
  resolve(driver.eventSynchronize, "cuEventSynchronize");
  resolve(driver.eventRecord, "cuEventRecord");
  resolve(driver.memAlloc, "cuMemAlloc_v2");
  resolve(driver.memAllocManaged, "cuMemAllocManaged");
  resolve(driver.memFree, "cuMemFree_v2");
  resolve(driver.memcpyAsync, "cuMemcpyAsync");
  resolve(driver.memsetD32Async, "cuMemsetD32Async");
  resolve(driver.memsetD16Async, "cuMemsetD16Async");
  resolve(driver.memHostRegister, "cuMemHostRegister_v2");
  resolve(driver.memHostUnregister, "cuMemHostUnregister");
  if (missing) {
    std::snprintf(driver.error, sizeof(driver.error),
                  "cuda: the CUDA driver (%s) has no %s; a newer driver is "
                  "needed",
                  library, missing);
    return;
  }
  // Messages only name errors with it, so a driver without it still works.
  driver.getErrorName = reinterpret_cast<decltype(driver.getErrorName)>(
      dlsym(handle, "cuGetErrorName"));

  char name[32];
  if (CUresult result = driver.init(0); result != kSuccess) {
    std::snprintf(driver.error, sizeof(driver.error),
                  "cuda: cuInit failed: %s; %s",
                  errorName(driver, result, name), kNeeded);
    return;
  }
  if (CUresult result = driver.deviceGetCount(&driver.deviceCount);
      result != kSuccess) {
    std::snprintf(driver.error, sizeof(driver.error),
                  "cuda: cuDeviceGetCount failed: %s; %s",
                  errorName(driver, result, name), kNeeded);
    return;
  }
  if (driver.deviceCount <= 0) {
    std::snprintf(driver.error, sizeof(driver.error),
                  "cuda: the CUDA driver finds no device; %s", kNeeded);
    return;
  }
  driver.contexts = new DeviceContext[driver.deviceCount];
}

/// The driver, loaded on the first call; its `error` says why when it cannot
/// be used.
Driver &getDriver() {
  static Driver driver;
  static std::once_flag once;
  std::call_once(once, [] { load(driver); });
  return driver;
}

/// Formats the failure's message and reports it as a failed check.
[[noreturn]] __attribute__((format(printf, 1, 2))) void
failWith(const char *format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(failure, sizeof(failure), format, args);
  va_end(args);
  gptq_runtime_check_failed(failure, /*fatal=*/0);
}

/// Reports the failure of driver call `call` on the default device, with
/// the driver's `detail` (a JIT log) when there is one.
[[noreturn]] void failCall(const Driver &driver, const char *call,
                           CUresult result, const char *detail = nullptr) {
  char name[32];
  failWith("cuda: %s failed: %s (device %d)%s%s", call,
           errorName(driver, result, name), defaultDevice.load(),
           detail && *detail ? ": " : "", detail ? detail : "");
}

void check(const Driver &driver, CUresult result, const char *call) {
  if (result != kSuccess)
    failCall(driver, call, result);
}

/// Returns the driver with the default device's primary context current on
/// this thread, or reports why it cannot.
const Driver &enter() {
  Driver &driver = getDriver();
  if (driver.error[0])
    gptq_runtime_check_failed(driver.error, /*fatal=*/0);
  int32_t device = defaultDevice.load();
  if (device < 0 || device >= driver.deviceCount)
    failWith("cuda: there is no device %d; the CUDA driver finds %d", device,
             driver.deviceCount);
  DeviceContext &context = driver.contexts[device];
  std::call_once(context.once, [&] {
    CUdevice handle;
    context.call = "cuDeviceGet";
    context.result = driver.deviceGet(&handle, device);
    if (context.result != kSuccess)
      return;
    context.call = "cuDevicePrimaryCtxRetain";
    context.result = driver.primaryCtxRetain(&context.context, handle);
    if (context.result != kSuccess)
      return;
    // The heap must be sized before the first kernel that allocates runs.
    context.call = "cuCtxSetCurrent";
    context.result = driver.ctxSetCurrent(context.context);
    if (context.result != kSuccess)
      return;
    context.call = "cuCtxSetLimit";
    context.result =
        driver.ctxSetLimit(kLimitMallocHeapSize, kDeviceHeapBytes);
  });
  check(driver, context.result, context.call);
  CUcontext current = nullptr;
  check(driver, driver.ctxGetCurrent(&current), "cuCtxGetCurrent");
  if (current != context.context)
    check(driver, driver.ctxSetCurrent(context.context), "cuCtxSetCurrent");
  return driver;
}

CUdeviceptr devicePtr(void *ptr) { return reinterpret_cast<CUdeviceptr>(ptr); }

bool checkedMul(uint64_t a, uint64_t b, uint64_t &result) {
  return !__builtin_mul_overflow(a, b, &result);
}

bool checkedAdd(uint64_t a, uint64_t b, uint64_t &result) {
  return !__builtin_add_overflow(a, b, &result);
}

} // namespace

bool mlir::gptq::runtime::getMemRefSpan(int64_t rank, const void *descriptor,
                                        int64_t elementSizeBytes,
                                        MemRefSpan &span) {
  if (rank < 0 || elementSizeBytes <= 0)
    return false;
  const auto *bytes = static_cast<const char *>(descriptor);
  char *aligned;
  std::memcpy(&aligned, bytes + sizeof(void *), sizeof(aligned));
  const char *words = bytes + 2 * sizeof(void *);
  auto word = [&](int64_t index) {
    int64_t value;
    std::memcpy(&value, words + index * sizeof(int64_t), sizeof(value));
    return value;
  };
  // The elements lie at offset + sum(i_d * stride_d) for 0 <= i_d < size_d;
  // the lowest and highest take i_d = 0 or size_d - 1 by the stride's sign.
  // `below` and `above` are their distances from the offset, in elements.
  uint64_t below = 0, above = 0;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = word(1 + d), stride = word(1 + rank + d);
    if (size < 0)
      return false;
    if (size == 0) {
      span = {aligned, 0};
      return true;
    }
    uint64_t magnitude = stride < 0 ? 0 - static_cast<uint64_t>(stride)
                                    : static_cast<uint64_t>(stride);
    uint64_t &side = stride < 0 ? below : above;
    uint64_t reach;
    if (!checkedMul(size - 1, magnitude, reach) ||
        !checkedAdd(side, reach, side))
      return false;
  }
  uint64_t elements, byteCount;
  if (!checkedAdd(below, above, elements) ||
      !checkedAdd(elements, 1, elements) ||
      !checkedMul(elements, elementSizeBytes, byteCount))
    return false;
  // Wrapping arithmetic gives the address of the lowest element whatever the
  // signs of the offset and the strides.
  uint64_t elementBytes = elementSizeBytes;
  uintptr_t begin = reinterpret_cast<uintptr_t>(aligned) +
                    static_cast<uint64_t>(word(0)) * elementBytes -
                    below * elementBytes;
  span = {reinterpret_cast<void *>(begin), byteCount};
  return true;
}

/// What gptq_cuda_probe says: 0 and the default device's description in
/// `text`, or non-zero and the reason.
static int probe(char (&text)[512], int &major, int &minor) {
  Driver &driver = getDriver();
  if (driver.error[0]) {
    std::snprintf(text, sizeof(text), "%s", driver.error);
    return 1;
  }
  int32_t device = defaultDevice.load();
  if (device < 0 || device >= driver.deviceCount) {
    std::snprintf(text, sizeof(text),
                  "cuda: there is no device %d; the CUDA driver finds %d",
                  device, driver.deviceCount);
    return 1;
  }
  CUdevice handle;
  char name[256];
  size_t totalBytes = 0;
  const char *call = "cuDeviceGet";
  CUresult result = driver.deviceGet(&handle, device);
  if (result == kSuccess) {
    call = "cuDeviceGetName";
    result = driver.deviceGetName(name, sizeof(name), handle);
  }
  if (result == kSuccess) {
    call = "cuDeviceGetAttribute";
    result = driver.deviceGetAttribute(&major, kAttributeComputeCapabilityMajor,
                                       handle);
  }
  if (result == kSuccess)
    result = driver.deviceGetAttribute(&minor, kAttributeComputeCapabilityMinor,
                                       handle);
  if (result == kSuccess) {
    call = "cuDeviceTotalMem";
    result = driver.deviceTotalMem(&totalBytes, handle);
  }
  if (result != kSuccess) {
    char error[32];
    std::snprintf(text, sizeof(text), "cuda: %s failed: %s (device %d)", call,
                  errorName(driver, result, error), device);
    return 1;
  }
  std::snprintf(text, sizeof(text), "%s, sm_%d%d, %zu GiB", name, major, minor,
                totalBytes >> 30);
  return 0;
}

/// Writes what the probe found into `out`: its description (or reason), or
/// with `chip` the device's architecture name on success.
static int probeInto(char *out, size_t capacity, bool chip) {
  char text[512];
  int major = 0, minor = 0;
  int status = probe(text, major, minor);
  if (!out || !capacity)
    return status;
  if (status == 0 && chip)
    std::snprintf(out, capacity, "sm_%d%d", major, minor);
  else
    std::snprintf(out, capacity, "%s", text);
  return status;
}

extern "C" int gptq_cuda_probe(char *message, size_t capacity) {
  return probeInto(message, capacity, /*chip=*/false);
}

extern "C" int gptq_cuda_chip(char *chip, size_t capacity) {
  return probeInto(chip, capacity, /*chip=*/true);
}

extern "C" void gptq_cuda_free_managed(void *ptr) {
  mgpuMemFree(ptr, nullptr);
}

namespace {
/// What mgpuModuleLoad(JIT) returns: the image, loaded into the driver on
/// the first function lookup. Code lowered by gpu-to-llvm loads every
/// kernel module from a global constructor, when a program or library
/// starts: loading there would make a program that never launches a kernel
/// (asked for --help, or run without a GPU to print an error) need the
/// driver, and fail outside any checked call.
struct LazyModule {
  const void *image;
  bool jit;
  int optLevel;
  std::mutex mutex;
  CUmodule module = nullptr;
};

CUmodule loadNow(const Driver &driver, LazyModule &lazy) {
  std::lock_guard<std::mutex> lock(lazy.mutex);
  if (lazy.module)
    return lazy.module;
  CUmodule module = nullptr;
  if (!lazy.jit) {
    check(driver, driver.moduleLoadData(&module, lazy.image),
          "cuModuleLoadData");
  } else {
    char log[1024] = {};
    // Integer option values are passed in place of the pointers.
    int options[] = {kJitOptimizationLevel, kJitErrorLogBuffer,
                     kJitErrorLogBufferSizeBytes};
    void *values[] = {
        reinterpret_cast<void *>(static_cast<intptr_t>(lazy.optLevel)), log,
        reinterpret_cast<void *>(sizeof(log))};
    if (CUresult result =
            driver.moduleLoadDataEx(&module, lazy.image, 3, options, values);
        result != kSuccess)
      failCall(driver, "cuModuleLoadDataEx", result, log);
  }
  lazy.module = module;
  return module;
}
} // namespace

extern "C" void *mgpuModuleLoad(void *data, size_t /*size*/) {
  return new LazyModule{data, /*jit=*/false, 0};
}

extern "C" void *mgpuModuleLoadJIT(void *data, int optLevel) {
  return new LazyModule{data, /*jit=*/true, optLevel};
}

extern "C" void mgpuModuleUnload(void *module) {
  auto *lazy = static_cast<LazyModule *>(module);
  if (!lazy)
    return;
  CUmodule loaded = lazy->module;
  delete lazy;
  if (loaded) {
    const Driver &driver = enter();
    check(driver, driver.moduleUnload(loaded), "cuModuleUnload");
  }
}

extern "C" void *mgpuModuleGetFunction(void *module, const char *name) {
  const Driver &driver = enter();
  CUmodule loaded = loadNow(driver, *static_cast<LazyModule *>(module));
  CUfunction function = nullptr;
  if (CUresult result = driver.moduleGetFunction(&function, loaded, name);
      result != kSuccess)
    failCall(driver, "cuModuleGetFunction", result, name);
  return function;
}

extern "C" void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                                 intptr_t gridZ, intptr_t blockX,
                                 intptr_t blockY, intptr_t blockZ, int32_t smem,
                                 void *stream, void **params, void **extra,
                                 size_t /*paramsCount*/) {
  // A grid without blocks is a loop without iterations: nothing to run.
  if (blockX >= 1 && blockY >= 1 && blockZ >= 1 &&
      (gridX == 0 || gridY == 0 || gridZ == 0))
    return;
  // The driver takes 32-bit sizes: a larger one must not wrap to a smaller
  // launch.
  for (intptr_t size : {gridX, gridY, gridZ, blockX, blockY, blockZ})
    if (size < 1 || static_cast<uint64_t>(size) > UINT32_MAX)
      failWith("cuda: cannot launch a kernel with a grid of %jd x %jd x %jd "
               "blocks of %jd x %jd x %jd threads",
               static_cast<intmax_t>(gridX), static_cast<intmax_t>(gridY),
               static_cast<intmax_t>(gridZ), static_cast<intmax_t>(blockX),
               static_cast<intmax_t>(blockY), static_cast<intmax_t>(blockZ));
  if (smem < 0)
    failWith("cuda: cannot launch a kernel with %d bytes of shared memory",
             smem);
  const Driver &driver = enter();
  auto *fn = static_cast<CUfunction>(function);
  if (smem > kDefaultSharedBytes)
    check(driver,
          driver.funcSetAttribute(fn, kFuncAttributeMaxDynamicSharedSizeBytes,
                                  smem),
          "cuFuncSetAttribute");
  check(driver,
        driver.launchKernel(fn, gridX, gridY, gridZ, blockX, blockY, blockZ,
                            smem, static_cast<CUstream>(stream), params, extra),
        "cuLaunchKernel");
  gptq_runtime_count_launch();
}

namespace {
/// Memory that mgpuMemFree gave back, kept for later allocations of about
/// the same size: allocating and freeing through the driver costs tens of
/// microseconds each (cuMemFree waits for the device), and compiled code
/// allocates its temporaries afresh in every step of its loops. Sizes are
/// rounded up to classes (powers of two up to 1 MiB, multiples of 2 MiB
/// above), and a free block serves a request of at least half its size.
///
/// Only plain functions run under the lock: a failing driver call jumps
/// back to the checked caller, which must not leave the mutex locked.
class BufferCache {
public:
  struct Block {
    void *ptr = nullptr;
    uint64_t bytes = 0;
    bool managed = false;
  };

  static uint64_t sizeClass(uint64_t bytes) {
    constexpr uint64_t kSmall = uint64_t(1) << 20, kGranule = uint64_t(2) << 20;
    if (bytes > kSmall)
      return bytes > UINT64_MAX - kGranule
                 ? bytes
                 : (bytes + kGranule - 1) / kGranule * kGranule;
    uint64_t size = 512;
    while (size < bytes)
      size *= 2;
    return size;
  }

  /// A cached block for `bytes` (already a size class) of the kind asked
  /// for, now live; a null block when none fits.
  Block take(uint64_t bytes, bool managed) {
    std::lock_guard<std::mutex> lock(mutex);
    size_t best = idle.size();
    for (size_t i = 0; i < idle.size(); ++i)
      if (idle[i].managed == managed && idle[i].bytes >= bytes &&
          idle[i].bytes / 2 <= bytes &&
          (best == idle.size() || idle[i].bytes < idle[best].bytes))
        best = i;
    if (best == idle.size())
      return {};
    Block block = idle[best];
    idle[best] = idle.back();
    idle.pop_back();
    idleBytes -= block.bytes;
    live.emplace(block.ptr, block);
    ++reused;
    return block;
  }

  void adopt(Block block) {
    std::lock_guard<std::mutex> lock(mutex);
    live.emplace(block.ptr, block);
  }

  /// Moves live `ptr` to the idle blocks. Returns false when it is not
  /// ours or the cache is full: then it must be freed.
  bool release(void *ptr) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = live.find(ptr);
    if (it == live.end())
      return false;
    Block block = it->second;
    live.erase(it);
    if (idleBytes + block.bytes > kMaxIdleBytes)
      return false;
    idle.push_back(block);
    idleBytes += block.bytes;
    return true;
  }

  /// Removes one idle block, to be freed by the caller; false when there
  /// is none.
  bool popIdle(Block &block) {
    std::lock_guard<std::mutex> lock(mutex);
    if (idle.empty())
      return false;
    block = idle.back();
    idle.pop_back();
    idleBytes -= block.bytes;
    return true;
  }

  GPTQCudaCacheStats stats() {
    std::lock_guard<std::mutex> lock(mutex);
    GPTQCudaCacheStats s;
    s.liveBlocks = live.size();
    s.idleBlocks = idle.size();
    s.idleBytes = idleBytes;
    s.reused = reused;
    return s;
  }

private:
  /// At most this much memory is kept idle; blocks beyond it are freed.
  static constexpr uint64_t kMaxIdleBytes = uint64_t(8) << 30;
  std::mutex mutex;
  std::unordered_map<void *, Block> live;
  std::vector<Block> idle;
  uint64_t idleBytes = 0;
  uint64_t reused = 0;
};

BufferCache &bufferCache() {
  static BufferCache *cache = new BufferCache; // outlives static destructors
  return *cache;
}

/// Streams that mgpuStreamDestroy gave back, for the next mgpuStreamCreate:
/// lowered code creates and destroys a stream around every launch and copy.
/// Work left on a returned stream stays ordered before what the next user
/// puts on it.
class StreamPool {
public:
  CUstream take() {
    std::lock_guard<std::mutex> lock(mutex);
    if (idle.empty())
      return nullptr;
    CUstream stream = idle.back();
    idle.pop_back();
    return stream;
  }
  /// Returns false when the pool is full: the stream must be destroyed.
  bool give(CUstream stream) {
    std::lock_guard<std::mutex> lock(mutex);
    if (idle.size() >= kMaxIdle)
      return false;
    idle.push_back(stream);
    return true;
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mutex);
    return idle.size();
  }

private:
  static constexpr size_t kMaxIdle = 64;
  std::mutex mutex;
  std::vector<CUstream> idle;
};

StreamPool &streamPool() {
  static StreamPool *pool = new StreamPool;
  return *pool;
}

/// Returns the cache's idle blocks to the driver.
void freeIdleBlocks(const Driver &driver) {
  BufferCache::Block idle;
  while (bufferCache().popIdle(idle))
    check(driver, driver.memFree(devicePtr(idle.ptr)), "cuMemFree");
}

CUresult allocate(const Driver &driver, CUdeviceptr &ptr, uint64_t bytes,
                  bool managed) {
  return managed ? driver.memAllocManaged(&ptr, bytes, kMemAttachGlobal)
                 : driver.memAlloc(&ptr, bytes);
}
} // namespace

extern "C" void *mgpuStreamCreate() {
  const Driver &driver = enter();
  if (CUstream stream = streamPool().take())
    return stream;
  CUstream stream = nullptr;
  // Blocking streams stay ordered with work on the null stream, which the
  // lowering passes for operations without a token.
  check(driver, driver.streamCreate(&stream, kStreamDefault), "cuStreamCreate");
  return stream;
}

extern "C" void mgpuStreamDestroy(void *stream) {
  const Driver &driver = enter();
  if (!stream || !streamPool().give(static_cast<CUstream>(stream)))
    check(driver, driver.streamDestroy(static_cast<CUstream>(stream)),
          "cuStreamDestroy");
}

extern "C" void mgpuStreamSynchronize(void *stream) {
  const Driver &driver = enter();
  check(driver, driver.streamSynchronize(static_cast<CUstream>(stream)),
        "cuStreamSynchronize");
}

extern "C" void mgpuStreamWaitEvent(void *stream, void *event) {
  const Driver &driver = enter();
  check(driver,
        driver.streamWaitEvent(static_cast<CUstream>(stream),
                               static_cast<CUevent>(event), 0),
        "cuStreamWaitEvent");
}

extern "C" void *mgpuEventCreate() {
  const Driver &driver = enter();
  CUevent event = nullptr;
  check(driver, driver.eventCreate(&event, kEventDisableTiming),
        "cuEventCreate");
  return event;
}

extern "C" void mgpuEventDestroy(void *event) {
  const Driver &driver = enter();
  check(driver, driver.eventDestroy(static_cast<CUevent>(event)),
        "cuEventDestroy");
}

extern "C" void mgpuEventSynchronize(void *event) {
  const Driver &driver = enter();
  check(driver, driver.eventSynchronize(static_cast<CUevent>(event)),
        "cuEventSynchronize");
}

extern "C" void mgpuEventRecord(void *event, void *stream) {
  const Driver &driver = enter();
  check(driver,
        driver.eventRecord(static_cast<CUevent>(event),
                           static_cast<CUstream>(stream)),
        "cuEventRecord");
}

extern "C" void *mgpuMemAlloc(uint64_t sizeBytes, void * /*stream*/,
                              bool isHostShared) {
  if (sizeBytes == 0)
    return nullptr;
  const Driver &driver = enter();
  uint64_t bytes = BufferCache::sizeClass(sizeBytes);
  BufferCache &cache = bufferCache();
  if (void *ptr = cache.take(bytes, isHostShared).ptr)
    return ptr;
  CUdeviceptr ptr = 0;
  CUresult result = allocate(driver, ptr, bytes, isHostShared);
  if (result == kErrorOutOfMemory) {
    // The idle blocks may be what the device lacks.
    freeIdleBlocks(driver);
    result = allocate(driver, ptr, bytes, isHostShared);
  }
  check(driver, result, isHostShared ? "cuMemAllocManaged" : "cuMemAlloc");
  cache.adopt({reinterpret_cast<void *>(ptr), bytes, isHostShared});
  return reinterpret_cast<void *>(ptr);
}

extern "C" void mgpuMemFree(void *ptr, void * /*stream*/) {
  if (!ptr)
    return;
  const Driver &driver = enter();
  // cuMemFree waits for the device's work, which may still use the memory;
  // so does giving it to the cache.
  check(driver, driver.ctxSynchronize(), "cuCtxSynchronize");
  if (!bufferCache().release(ptr))
    check(driver, driver.memFree(devicePtr(ptr)), "cuMemFree");
}

extern "C" void gptq_cuda_release_cached_memory() {
  freeIdleBlocks(enter());
}

extern "C" GPTQCudaCacheStats gptq_cuda_cache_stats() {
  GPTQCudaCacheStats stats = bufferCache().stats();
  stats.idleStreams = streamPool().size();
  return stats;
}

extern "C" void mgpuMemcpy(void *dst, void *src, size_t sizeBytes,
                           void *stream) {
  const Driver &driver = enter();
  check(driver,
        driver.memcpyAsync(devicePtr(dst), devicePtr(src), sizeBytes,
                           static_cast<CUstream>(stream)),
        "cuMemcpyAsync");
}

extern "C" void mgpuMemset32(void *dst, unsigned int value, size_t count,
                             void *stream) {
  const Driver &driver = enter();
  check(driver,
        driver.memsetD32Async(devicePtr(dst), value, count,
                              static_cast<CUstream>(stream)),
        "cuMemsetD32Async");
}

extern "C" void mgpuMemset16(void *dst, unsigned short value, size_t count,
                             void *stream) {
  const Driver &driver = enter();
  check(driver,
        driver.memsetD16Async(devicePtr(dst), value, count,
                              static_cast<CUstream>(stream)),
        "cuMemsetD16Async");
}

extern "C" void mgpuSetDefaultDevice(int32_t device) {
  defaultDevice.store(device);
}

/// The span of a memref that (un)registering it covers; reports a memref
/// whose span does not fit in memory.
static mlir::gptq::runtime::MemRefSpan
getRegisteredSpan(int64_t rank, void *descriptor, int64_t elementSizeBytes) {
  mlir::gptq::runtime::MemRefSpan span;
  if (!mlir::gptq::runtime::getMemRefSpan(rank, descriptor, elementSizeBytes,
                                          span))
    failWith("cuda: cannot register a memref of rank %jd whose elements of "
             "%jd bytes span more than 2^64 bytes",
             static_cast<intmax_t>(rank),
             static_cast<intmax_t>(elementSizeBytes));
  return span;
}

extern "C" void mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor,
                                          int64_t elementSizeBytes) {
  mlir::gptq::runtime::MemRefSpan span =
      getRegisteredSpan(rank, descriptor, elementSizeBytes);
  if (span.bytes)
    mgpuMemHostRegister(span.begin, span.bytes);
}

extern "C" void mgpuMemHostUnregisterMemRef(int64_t rank, void *descriptor,
                                            int64_t elementSizeBytes) {
  mlir::gptq::runtime::MemRefSpan span =
      getRegisteredSpan(rank, descriptor, elementSizeBytes);
  if (span.bytes)
    mgpuMemHostUnregister(span.begin);
}

extern "C" void mgpuMemHostRegister(void *ptr, uint64_t sizeBytes) {
  const Driver &driver = enter();
  check(driver,
        driver.memHostRegister(ptr, sizeBytes, kMemHostRegisterPortable),
        "cuMemHostRegister");
}

extern "C" void mgpuMemHostUnregister(void *ptr) {
  const Driver &driver = enter();
  check(driver, driver.memHostUnregister(ptr), "cuMemHostUnregister");
}
