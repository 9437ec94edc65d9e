//===- CompileCache.h - Compiled code kept on disk --------------*- C++ -*-===//
//
// Private to lib/Execution: the on-disk cache of compiled code that
// CompiledFunction (Jit.cpp) looks modules up in and writes their code to.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_LIB_EXECUTION_COMPILECACHE_H
#define GPTQ_LIB_EXECUTION_COMPILECACHE_H

#include "gptq/Execution/Jit.h"

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/xxhash.h"

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

#ifndef GPTQ_C_RUNNER_UTILS
#define GPTQ_C_RUNNER_UTILS ""
#endif
#ifndef GPTQ_OPENMP_RUNTIME
#define GPTQ_OPENMP_RUNTIME ""
#endif
#ifndef GPTQ_RUNTIME_LIBRARY
#define GPTQ_RUNTIME_LIBRARY ""
#endif
#ifndef GPTQ_UKERNEL_LIBRARY
#define GPTQ_UKERNEL_LIBRARY ""
#endif

namespace mlir {
class ModuleOp;
class PassManager;

namespace gptq {

/// The shared libraries compiled code calls (those the build found): the
/// JIT loads them, and a cached library is linked against them.
inline constexpr const char *kRuntimeLibraries[] = {
    GPTQ_C_RUNNER_UTILS, GPTQ_OPENMP_RUNTIME, GPTQ_RUNTIME_LIBRARY,
    GPTQ_UKERNEL_LIBRARY};

/// What Jit.cpp does to a module after lowering, part of every cache key
/// (change it with that).
inline constexpr const char *kCodeGeneration =
    "identical functions merged, codegen O3, only the entry's packed "
    "wrapper, PIC, 512-bit vectors on AVX-512, static constructors as "
    "gptq_module_init; linked "
    "with " GPTQ_C_RUNNER_UTILS " " GPTQ_OPENMP_RUNTIME " " GPTQ_RUNTIME_LIBRARY
    " " GPTQ_UKERNEL_LIBRARY;

/// The exported function that runs a compiled module's static constructors.
inline constexpr const char *kModuleInit = "gptq_module_init";

/// The entry's flags (kEntry*): what a call of the code needs to know of
/// its lowering, which a cache hit skips.
/// Results come from libGPTQRuntime's allocator.
inline constexpr uint64_t kEntryRuntimeAllocator = 1;
/// Results are CUDA managed memory.
inline constexpr uint64_t kEntryManagedResults = 2;

/// A cache entry being written on a thread of its own.
struct CacheWrite {
  /// Returns once the entry is written (or failed to be); at once in a
  /// process forked meanwhile, which has no writing thread (its parent
  /// finishes the entry).
  void wait();
  std::mutex mutex;
  std::condition_variable written;
  bool done = false;
  /// The process whose thread writes it.
  pid_t writer = 0;
};

/// Code loaded from a cache entry.
struct CachedCode {
  void *library;
  std::vector<void (*)(void **)> functions;
  uint64_t flags;
};

/// Where a module's code is cached: the entry's path and its key's
/// digest (an empty path: not cached).
struct CacheSlot {
  llvm::SmallString<256> path;
  llvm::XXH128_hash_t digest{0, 0};
};

/// The text the cache key hashes: the entry, the module, the host CPU, the
/// options that shape code generation, kCodeGeneration and `cudaRuntime`
/// (the library GPU code links, empty for the CPU). A module not yet
/// `lowered` is keyed before lowering, with the pipeline `pm`'s text, the
/// identity of this build of the compiler (whose passes and kernel library
/// lower it) and its locations (which the lowering writes into run-time
/// checks' messages), so that a hit costs no lowering; a module lowered by
/// a caller's pipeline (a function, not a text) is keyed as it is.
std::string cacheKeyText(ModuleOp module, PassManager &pm, bool lowered,
                         StringRef buildIdentity,
                         const llvm::orc::JITTargetMachineBuilder &tm,
                         unsigned optLevel, StringRef entry,
                         StringRef cudaRuntime);

/// The code cached under the key `keyText` in `cacheDir` (waiting for a
/// write of it under way), with `slot` where it is, or would be, kept.
std::optional<CachedCode> lookUpCache(StringRef keyText, StringRef cacheDir,
                                      StringRef entry,
                                      ArrayRef<std::string> packedNames,
                                      CacheSlot &slot);

/// Writes the cache entry `path` of `object` (writeCacheEntry) on a thread
/// of its own: the code is ready before its library is linked, and the
/// link runs beside what the caller does next. A write that fails warns as
/// a synchronous one would.
std::shared_ptr<CacheWrite>
writeCacheEntryInBackground(std::string object, std::string path,
                            llvm::XXH128_hash_t digest, uint64_t flags,
                            const JitOptions &options);

/// Identifies this build of the compiler (the passes and the kernel library
/// that lower modules) in cache keys: the GNU build ID of the executable or
/// shared library that holds this code, or, when the linker wrote none, a
/// digest of that file; empty when neither can be read (modules are then
/// keyed once lowered).
llvm::StringRef compilerBuildIdentity();

/// Warns, once per process, that the cache `cacheDir` cannot be written
/// (the warning prefixed by `toolName`).
void warnCacheUnwritable(StringRef toolName, StringRef cacheDir,
                         llvm::Error err);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_LIB_EXECUTION_COMPILECACHE_H
