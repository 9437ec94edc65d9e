//===- CompileCache.cpp - Compiled code kept on disk ----------------------===//
//
// The on-disk cache of compiled code: the text a module is keyed by, where
// its entry lies, entries read back (checked whole before dlopen maps them)
// and written (linked into a shared library, renamed into place) on a
// thread of their own, and the identity of this build of the compiler.
//
//===----------------------------------------------------------------------===//

#include "CompileCache.h"

#include "gptq/Support/Output.h"
#include "gptq/Support/Signals.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/WithColor.h"
#include "llvm/TargetParser/Host.h"

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <map>
#include <mutex>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace mlir;
using namespace mlir::gptq;

namespace {
llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}
} // namespace

std::string mlir::gptq::defaultCacheDir() {
  if (std::optional<std::string> dir =
          llvm::sys::Process::GetEnv("GPTQ_MLIR_CACHE_DIR"))
    return *dir == "off" ? std::string() : *dir;
  llvm::SmallString<256> path;
  if (std::optional<std::string> xdg =
          llvm::sys::Process::GetEnv("XDG_CACHE_HOME")) {
    path = *xdg;
  } else if (!llvm::sys::path::home_directory(path)) {
    return {};
  } else {
    llvm::sys::path::append(path, ".cache");
  }
  llvm::sys::path::append(path, "gptq-mlir");
  return std::string(path);
}

namespace {
/// Links an object file into a shared library with the system's C compiler
/// driver, beside the runtimes the code calls.
llvm::Error linkSharedLibrary(StringRef object, StringRef library) {
  auto cc = llvm::sys::findProgramByName("cc");
  if (!cc)
    return error("no C compiler driver 'cc' to link the cached library");
  SmallVector<std::string> args = {*cc, "-shared", "-o", library.str(),
                                   object.str()};
  for (const char *runtime : kRuntimeLibraries) {
    if (!std::strlen(runtime))
      continue;
    args.push_back(runtime);
    args.push_back(
        ("-Wl,-rpath," + llvm::sys::path::parent_path(runtime)).str());
  }
  SmallVector<StringRef> argRefs(args.begin(), args.end());
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(""),
                                          StringRef("")};
  std::string message;
  if (llvm::sys::ExecuteAndWait(*cc, argRefs, std::nullopt, redirects,
                                /*SecondsToWait=*/0, /*MemoryLimit=*/0,
                                &message) != 0)
    return error("linking the cached library failed" +
                 (message.empty() ? llvm::Twine() : ": " + message));
  return llvm::Error::success();
}

/// A cache entry is the shared library followed by a trailer: this magic,
/// the library's size, its xxh3 hash, the 128-bit xxh3 digest of the key
/// text it was compiled for and its flags (kEntry*; little-endian 64-bit
/// words). The dynamic
/// loader ignores bytes past what the ELF headers map; the trailer lets a
/// load tell a complete entry of this key from one that a crash, a full
/// disk or anything else cut short or damaged, or from another module's
/// entry copied under this name, before dlopen maps it.
constexpr char kEntryMagic[8] = {'G', 'P', 'T', 'Q', 'S', 'O', '0', '3'};
constexpr size_t kTrailerBytes = 48;
/// No compiled module comes near this; a bigger "entry" is not one.
constexpr uint64_t kMaxEntryBytes = uint64_t(1) << 32;

void appendWord(std::string &s, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    s += static_cast<char>((v >> (8 * i)) & 0xff);
}
uint64_t readWord(const char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

/// The digest of a cache key's text, as the trailer records it.
llvm::XXH128_hash_t keyDigest(StringRef keyText) {
  return llvm::xxh3_128bits(llvm::arrayRefFromStringRef(keyText));
}

/// The cache entry at `path`, opened for dlopen when it is a regular file
/// (not a link, a pipe or a device: anything else counts as no entry, and
/// opening it never blocks), complete, undamaged and compiled for
/// `digest`: its descriptor, which the caller closes, and its flags
/// (kEntry*) in `flags`; or -1.
int openCompleteEntry(StringRef path, llvm::XXH128_hash_t digest,
                      uint64_t &flags) {
  int fd = ::open(path.str().c_str(),
                  O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0)
    return -1;
  struct stat status;
  if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode) ||
      uint64_t(status.st_size) < kTrailerBytes ||
      uint64_t(status.st_size) > kMaxEntryBytes) {
    ::close(fd);
    return -1;
  }
  auto buffer = llvm::MemoryBuffer::getOpenFile(
      fd, path, status.st_size, /*RequiresNullTerminator=*/false);
  bool complete = false;
  if (buffer) {
    StringRef bytes = (*buffer)->getBuffer();
    size_t size = bytes.size() - kTrailerBytes;
    const char *trailer = bytes.data() + size;
    complete =
        bytes.size() == uint64_t(status.st_size) &&
        std::memcmp(trailer, kEntryMagic, 8) == 0 &&
        readWord(trailer + 8) == size &&
        readWord(trailer + 24) == digest.low64 &&
        readWord(trailer + 32) == digest.high64 &&
        readWord(trailer + 16) == llvm::xxh3_64bits(bytes.take_front(size));
    flags = complete ? readWord(trailer + 40) : 0;
  }
  if (!complete) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// Keeps `object`, a module's compiled object, as the cache entry `path`:
/// the object is linked into a shared library in the cache directory, and
/// the library with its trailer is renamed into place, so concurrent runs
/// never see half an entry. Temporary files are removed whatever happens.
llvm::Error writeCacheEntry(const std::string &object, StringRef path,
                            llvm::XXH128_hash_t digest, uint64_t flags) {
  StringRef dir = llvm::sys::path::parent_path(path);
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return error("cannot create '" + dir + "': " + ec.message());
  // Whatever is at the entry's name and is not a regular file (a link, a
  // pipe, a device) is the cache's own damage: it is removed, never
  // written through.
  struct stat status;
  std::string name = path.str();
  if (::lstat(name.c_str(), &status) == 0 && !S_ISREG(status.st_mode) &&
      !S_ISDIR(status.st_mode) && ::unlink(name.c_str()) != 0)
    return error("cannot replace '" + path + "', which is not a regular file");

  std::string tag = "." + std::to_string(::getpid()) + ".tmp";
  std::string objectPath = (path + tag + ".o").str();
  std::string libraryPath = (path + tag).str();
  // Removed whatever happens, also when the tool is interrupted while the
  // library is linked.
  {
    DeferInterrupts registering;
    llvm::sys::RemoveFileOnSignal(objectPath);
    llvm::sys::RemoveFileOnSignal(libraryPath);
  }
  llvm::scope_exit cleanup([&] {
    llvm::sys::fs::remove(objectPath);
    llvm::sys::fs::remove(libraryPath);
    llvm::sys::DontRemoveFileOnSignal(objectPath);
    llvm::sys::DontRemoveFileOnSignal(libraryPath);
  });
  if (llvm::Error err = writeFileAtomically(objectPath, object))
    return err;
  if (llvm::Error err = linkSharedLibrary(objectPath, libraryPath))
    return err;
  auto library = llvm::MemoryBuffer::getFile(libraryPath, /*IsText=*/false,
                                             /*RequiresNullTerminator=*/false);
  if (!library)
    return error("cannot read '" + libraryPath +
                 "': " + library.getError().message());
  std::string entry = (*library)->getBuffer().str();
  uint64_t size = entry.size(), hash = llvm::xxh3_64bits(entry);
  entry.append(kEntryMagic, 8);
  appendWord(entry, size);
  appendWord(entry, hash);
  appendWord(entry, digest.low64);
  appendWord(entry, digest.high64);
  appendWord(entry, flags);
  return writeFileAtomically(path, entry);
}

/// Whether a loadable segment of the object `info` describes holds
/// `address`.
bool holdsAddress(const dl_phdr_info *info, uintptr_t address) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &segment = info->dlpi_phdr[i];
    uintptr_t begin = info->dlpi_addr + segment.p_vaddr;
    if (segment.p_type == PT_LOAD && address >= begin &&
        address < begin + segment.p_memsz)
      return true;
  }
  return false;
}

/// The GNU build ID of the object `info` describes, in hex; empty when it
/// has none.
std::string gnuBuildId(const dl_phdr_info *info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_NOTE)
      continue;
    const char *note =
        reinterpret_cast<const char *>(info->dlpi_addr + segment.p_vaddr);
    const char *end = note + segment.p_memsz;
    while (note + sizeof(ElfW(Nhdr)) <= end) {
      const auto *header = reinterpret_cast<const ElfW(Nhdr) *>(note);
      const char *name = note + sizeof(ElfW(Nhdr));
      const char *desc = name + llvm::alignTo(header->n_namesz, 4);
      const char *next = desc + llvm::alignTo(header->n_descsz, 4);
      if (next > end)
        break;
      if (header->n_type == NT_GNU_BUILD_ID && header->n_namesz == 4 &&
          std::memcmp(name, "GNU", 4) == 0)
        return llvm::toHex(llvm::StringRef(desc, header->n_descsz),
                           /*LowerCase=*/true);
      note = next;
    }
  }
  return std::string();
}

} // namespace

llvm::StringRef mlir::gptq::compilerBuildIdentity() {
  static const std::string identity = [] {
    // The loaded object that holds this function (the library with the
    // passes and the embedded kernels, or the tool linked statically).
    struct Search {
      uintptr_t address;
      std::string buildId;
      std::string file;
    } search{reinterpret_cast<uintptr_t>(&compilerBuildIdentity), {}, {}};
    dl_iterate_phdr(
        [](dl_phdr_info *info, size_t, void *data) -> int {
          auto *search = static_cast<Search *>(data);
          if (!holdsAddress(info, search->address))
            return 0;
          search->file = info->dlpi_name && *info->dlpi_name ? info->dlpi_name
                                                             : "/proc/self/exe";
          search->buildId = gnuBuildId(info);
          return 1;
        },
        &search);
    if (!search.buildId.empty())
      return "build-id " + search.buildId;
    // Without a build ID: a digest of the object's file.
    auto file = llvm::MemoryBuffer::getFile(search.file, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
    if (search.file.empty() || !file)
      return std::string();
    llvm::XXH128_hash_t hash =
        llvm::xxh3_128bits(llvm::arrayRefFromStringRef((*file)->getBuffer()));
    return llvm::formatv("xxh3 {0:x-16}{1:x-16}", hash.high64, hash.low64)
        .str();
  }();
  return identity;
}

void mlir::gptq::warnCacheUnwritable(StringRef toolName, StringRef cacheDir,
                                     llvm::Error err) {
  static std::atomic<bool> warned{false};
  std::string message = llvm::toString(std::move(err));
  if (warned.exchange(true))
    return;
  llvm::WithColor::warning(llvm::errs(), toolName)
      << "compiled code is not cached (" << cacheDir << "): " << message
      << "; running without the cache\n";
}

namespace {
/// The cache entries this process is writing, by path: a lookup of one
/// waits for its write rather than compiling the module again, and the
/// process waits for all before it ends.
struct PendingEntries {
  ~PendingEntries() {
    for (auto &entry : writes)
      entry.second->wait();
  }
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<CacheWrite>> writes;
};

PendingEntries &pendingEntries() {
  static PendingEntries pending;
  return pending;
}

} // namespace

std::shared_ptr<CacheWrite> mlir::gptq::writeCacheEntryInBackground(
    std::string object, std::string path, llvm::XXH128_hash_t digest,
    uint64_t flags, const JitOptions &options) {
  auto write = std::make_shared<CacheWrite>();
  write->writer = ::getpid();
  {
    PendingEntries &pending = pendingEntries();
    std::lock_guard<std::mutex> lock(pending.mutex);
    pending.writes[path] = write;
  }
  std::thread([write, object = std::move(object), path, digest, flags,
               toolName = options.toolName, cacheDir = options.cacheDir] {
    if (llvm::Error err = writeCacheEntry(object, path, digest, flags))
      warnCacheUnwritable(toolName, cacheDir, std::move(err));
    {
      std::lock_guard<std::mutex> lock(write->mutex);
      write->done = true;
    }
    write->written.notify_all();
  }).detach();
  return write;
}

namespace {
/// Waits for this process's write of the cache entry `path`, if any.
void waitForCacheEntry(const std::string &path) {
  std::shared_ptr<CacheWrite> write;
  {
    PendingEntries &pending = pendingEntries();
    std::lock_guard<std::mutex> lock(pending.mutex);
    auto it = pending.writes.find(path);
    if (it == pending.writes.end())
      return;
    write = it->second;
    pending.writes.erase(it);
  }
  write->wait();
}
} // namespace

void CacheWrite::wait() {
  // A process forked while the entry was written has no writing thread:
  // its parent finishes the entry.
  if (::getpid() != writer)
    return;
  std::unique_lock<std::mutex> lock(mutex);
  written.wait(lock, [&] { return done; });
}

void mlir::gptq::waitForCacheWrites() {
  std::map<std::string, std::shared_ptr<CacheWrite>> writes;
  {
    PendingEntries &pending = pendingEntries();
    std::lock_guard<std::mutex> lock(pending.mutex);
    writes.swap(pending.writes);
  }
  for (auto &entry : writes)
    entry.second->wait();
}

std::string mlir::gptq::cacheKeyText(
    ModuleOp module, PassManager &pm, bool lowered, StringRef buildIdentity,
    const llvm::orc::JITTargetMachineBuilder &tm, unsigned optLevel,
    StringRef entry, StringRef cudaRuntime) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << LLVM_VERSION_STRING << "\n"
     << kCodeGeneration << "\n"
     << llvm::sys::getHostCPUName() << "\n"
     << tm.getCPU() << "\n"
     << tm.getFeatures().getString() << "\nO" << optLevel << "\n"
     << entry << "\n";
  if (!cudaRuntime.empty())
    os << "cuda " << cudaRuntime << "\n";
  OpPrintingFlags printing;
  if (!lowered) {
    os << "lowered by " << buildIdentity << " with ";
    pm.printAsTextualPipeline(os);
    os << "\n";
    // With the locations ("model.mlir:24:5: forward: token id out of
    // range").
    printing.enableDebugInfo();
  }
  module->print(os, printing);
  return text;
}

namespace {
/// Where the entry of the key with `digest` lies in `dir`: part of the
/// digest, then `entry` for people (the trailer's whole digest decides).
llvm::SmallString<256> cacheEntryPath(StringRef dir, llvm::XXH128_hash_t digest,
                                      StringRef entry) {
  std::string readable = entry.str();
  for (char &c : readable)
    if (!llvm::isAlnum(c) && c != '_')
      c = '_';
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(
      path, llvm::formatv("{0:x-16}-{1}.so", digest.high64, readable).str());
  return path;
}

/// The code of the complete cache entry at `path` whose key has `digest`,
/// its packed entries `packedNames` looked up and its module initializer
/// run; nothing when there is none (a damaged entry, another key's, or
/// anything but a regular file counts as missing: it is compiled afresh and
/// replaced).
std::optional<CachedCode>
loadCacheEntry(StringRef path, llvm::XXH128_hash_t digest,
               llvm::ArrayRef<std::string> packedNames) {
  std::string file = path.str();
  uint64_t flags = 0;
  int entryFd = openCompleteEntry(file, digest, flags);
  if (entryFd < 0)
    return std::nullopt;
  // Loaded by its name (the loader shares libraries by name), then checked
  // to be the file that was verified.
  void *handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  struct stat checked, loaded;
  bool same =
      ::fstat(entryFd, &checked) == 0 && ::stat(file.c_str(), &loaded) == 0 &&
      checked.st_dev == loaded.st_dev && checked.st_ino == loaded.st_ino;
  ::close(entryFd);
  if (handle && !same) {
    dlclose(handle);
    handle = nullptr;
  }
  if (!handle)
    return std::nullopt;
  CachedCode code{handle, {}, flags};
  for (const std::string &name : packedNames) {
    void *sym = dlsym(handle, name.c_str());
    if (!sym) {
      dlclose(handle);
      return std::nullopt;
    }
    code.functions.push_back(reinterpret_cast<void (*)(void **)>(sym));
  }
  if (void *init = dlsym(handle, kModuleInit))
    reinterpret_cast<void (*)()>(init)();
  return code;
}
} // namespace

std::optional<CachedCode>
mlir::gptq::lookUpCache(StringRef keyText, StringRef cacheDir, StringRef entry,
                        ArrayRef<std::string> packedNames, CacheSlot &slot) {
  slot.digest = keyDigest(keyText);
  slot.path = cacheEntryPath(cacheDir, slot.digest, entry);
  waitForCacheEntry(slot.path.str().str());
  return loadCacheEntry(slot.path, slot.digest, packedNames);
}
