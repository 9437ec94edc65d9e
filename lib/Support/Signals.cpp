//===- Signals.cpp - Signals that end a tool cleanly ----------------------===//

#include "gptq/Support/Signals.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Signals.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace mlir::gptq;

namespace {
/// Live MappedInputs, read by the SIGBUS handler: a slot is claimed by
/// setting its path last, and freed by clearing the path first, so that the
/// handler sees either a whole region or none.
struct Region {
  std::atomic<uintptr_t> start{0};
  std::atomic<size_t> size{0};
  std::atomic<const char *> path{nullptr};
  /// A library's input (MappedInputOwner): a fault is recovered from.
  std::atomic<bool> recoverable{false};
  /// Set by the handler when it recovered from a fault here.
  std::atomic<bool> faulted{false};
};
constexpr int kRegions = 256;
Region regions[kRegions];
std::mutex regionsMutex;

std::atomic<const char *> toolName{"gptq-mlir"};
std::atomic<int> deferDepth{0};
std::atomic<int> deferredSignal{0};
/// The thread that creates and renames the tool's files: interrupts are
/// handled on it, so that it is stopped while the handler removes them
/// (handled on another thread, it went on creating temporary files that
/// outlived the removal).
std::atomic<bool> haveFileThread{false};
pthread_t fileThread;

constexpr int kInterrupts[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction previousBus;
std::mutex busHandlerMutex;

/// The owner of the MappedInputs this thread makes (MappedInputOwner).
thread_local const void *currentOwner = nullptr;
struct sigaction previousInterrupt[3];

/// Which interrupts the process was started with ignored (SIGHUP under
/// nohup, SIGINT in a shell's background job), recorded before main, when
/// LLVM's handlers have not yet replaced the inherited dispositions: such a
/// signal stays ignored (LLVM's handler would remove the run's temporary
/// files and let the run go on without them).
bool ignoredAtStart[3];
const bool recordedAtStart = [] {
  for (int i = 0; i < 3; ++i) {
    struct sigaction action;
    ignoredAtStart[i] = ::sigaction(kInterrupts[i], nullptr, &action) == 0 &&
                        !(action.sa_flags & SA_SIGINFO) &&
                        action.sa_handler == SIG_IGN;
  }
  return true;
}();

void writeAll(const char *text) {
  size_t left = std::strlen(text);
  while (left > 0) {
    ssize_t n = ::write(STDERR_FILENO, text, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return;
    text += n;
    left -= size_t(n);
  }
}

/// Hands `signal` to the handler that was installed before ours.
void chain(int signal, siginfo_t *info, void *context,
           const struct sigaction &previous) {
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction) {
      previous.sa_sigaction(signal, info, context);
      return;
    }
  } else if (previous.sa_handler == SIG_IGN) {
    return;
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler) {
    previous.sa_handler(signal);
    return;
  }
  // The default action: on return from this handler the faulting access
  // (SIGBUS) repeats and ends the process; an interrupt is raised again.
  ::signal(signal, SIG_DFL);
  if (signal != SIGBUS)
    ::raise(signal);
}

/// A disposition that calls `handler` with the fault's details, on the
/// alternate stack where there is one.
struct sigaction infoAction(void (*handler)(int, siginfo_t *, void *)) {
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  action.sa_sigaction = handler;
  return action;
}

/// Maps zero pages over `region` from the page of `address` to the end of
/// the file's pages, so that the faulting access, repeated, reads zeros.
bool recover(Region &region, uintptr_t address) {
  long page = ::sysconf(_SC_PAGESIZE);
  if (page <= 0)
    return false;
  uintptr_t mask = uintptr_t(page) - 1;
  uintptr_t first = address & ~mask;
  uintptr_t end = (region.start.load() + region.size.load() + mask) & ~mask;
  void *zeros = ::mmap(reinterpret_cast<void *>(first), end - first,
                       PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (zeros == MAP_FAILED)
    return false;
  region.faulted.store(true);
  return true;
}

void onBus(int signal, siginfo_t *info, void *context) {
  auto address = reinterpret_cast<uintptr_t>(info ? info->si_addr : nullptr);
  for (Region &region : regions) {
    const char *path = region.path.load();
    uintptr_t start = region.start.load();
    if (!path || address < start || address - start >= region.size.load())
      continue;
    // A library's input: its owner reports the change after the call.
    if (region.recoverable.load() && recover(region, address))
      return;
    // Several threads may fault on the same pages: the first one reports
    // and ends the process, the others wait for that.
    static std::atomic<bool> reporting{false};
    if (reporting.exchange(true))
      for (;;)
        ::pause();
    writeAll(toolName.load());
    writeAll(": error: ");
    writeAll(path);
    writeAll(": the file changed while it was read (cut short or replaced "
             "during the run); no output was written\n");
    // The temporary files of pending outputs (llvm::sys::fs::TempFile
    // registers each for removal on a signal).
    llvm::sys::RunInterruptHandlers();
    ::_exit(1);
  }
  chain(signal, info, context, previousBus);
}

void onInterrupt(int signal, siginfo_t *info, void *context) {
  int which = 0;
  while (kInterrupts[which] != signal)
    ++which;
  if (ignoredAtStart[which])
    return;
  if (haveFileThread.load() && !pthread_equal(pthread_self(), fileThread)) {
    ::pthread_kill(fileThread, signal);
    return;
  }
  if (deferDepth.load() > 0) {
    int none = 0;
    deferredSignal.compare_exchange_strong(none, signal);
    return;
  }
  chain(signal, info, context, previousInterrupt[which]);
}

llvm::Error changed(const std::string &path) {
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      path + ": the file changed while it was read (replaced or written "
             "during the run); no output was written");
}

/// While a run is open (a tool's RunFiles lives), every file mapped in it,
/// as it was when first mapped: the check before a commit also covers files
/// whose mapping is already gone (gptq-opt writes its output after the
/// module, and the archive it maps, are freed). Outside a run (a library,
/// the unit tests), only live mappings are checked.
std::mutex snapshotsMutex;
std::vector<FileIdentity> &snapshots() {
  static std::vector<FileIdentity> all;
  return all;
}
int openRuns = 0;

/// The live MappedInputs.
std::vector<const MappedInput *> &live() {
  static std::vector<const MappedInput *> inputs;
  return inputs;
}
} // namespace

void mlir::gptq::ensureMappedInputHandler() {
  auto ours = [](const struct sigaction &action) {
    return (action.sa_flags & SA_SIGINFO) && action.sa_sigaction == onBus;
  };
  struct sigaction current;
  if (::sigaction(SIGBUS, nullptr, &current) == 0 && ours(current))
    return;
  std::lock_guard<std::mutex> lock(busHandlerMutex);
  struct sigaction action = infoAction(onBus);
  struct sigaction replaced;
  if (::sigaction(SIGBUS, &action, &replaced) == 0 && !ours(replaced))
    previousBus = replaced;
}

void mlir::gptq::installToolSignalHandlers(const char *name) {
  static std::once_flag once;
  toolName.store(name);
  std::call_once(once, [] {
    // LLVM's handlers first (InitLLVM installs them; otherwise the first
    // file registered for removal on a signal would, over ours): ours run
    // first and hand on to them what is not ours.
    llvm::sys::AddSignalHandler([](void *) {}, nullptr);
    ensureMappedInputHandler();
    struct sigaction action = infoAction(onInterrupt);
    for (int i = 0; i < 3; ++i)
      ::sigaction(kInterrupts[i], &action, &previousInterrupt[i]);
  });
}

FileIdentity FileIdentity::of(llvm::StringRef path) {
  FileIdentity identity;
  identity.path = path.str();
  struct stat status;
  if (::stat(identity.path.c_str(), &status) != 0)
    return identity;
  identity.known = true;
  identity.device = status.st_dev;
  identity.inode = status.st_ino;
  identity.size = status.st_size;
  identity.modifiedNanoseconds =
      (long long)status.st_mtim.tv_sec * 1000000000LL + status.st_mtim.tv_nsec;
  return identity;
}

bool FileIdentity::sameFile(const FileIdentity &other) const {
  return path == other.path && known == other.known &&
         device == other.device && inode == other.inode;
}

llvm::Error FileIdentity::checkUnchanged() const {
  if (!known)
    return llvm::Error::success();
  FileIdentity now = of(path);
  if (!now.sameFile(*this) || now.size != size ||
      now.modifiedNanoseconds != modifiedNanoseconds)
    return changed(path);
  return llvm::Error::success();
}

MappedInput::MappedInput(const void *data, size_t size, llvm::StringRef name)
    : ownerHandle(currentOwner), identity(FileIdentity::of(name)) {
  {
    std::lock_guard<std::mutex> lock(snapshotsMutex);
    live().push_back(this);
    // Outside a run nothing is kept; in one, each file once.
    if (openRuns > 0 &&
        llvm::none_of(snapshots(), [&](const FileIdentity &was) {
          return was.sameFile(identity);
        }))
      snapshots().push_back(identity);
  }
  if (!data || size == 0)
    return;
  std::lock_guard<std::mutex> lock(regionsMutex);
  for (int i = 0; i < kRegions; ++i) {
    if (regions[i].path.load())
      continue;
    regions[i].start.store(reinterpret_cast<uintptr_t>(data));
    regions[i].size.store(size);
    regions[i].recoverable.store(ownerHandle != nullptr);
    regions[i].faulted.store(false);
    regions[i].path.store(::strdup(identity.path.c_str()));
    slot = i;
    return;
  }
}

MappedInput::~MappedInput() {
  {
    std::lock_guard<std::mutex> lock(snapshotsMutex);
    llvm::erase(live(), this);
  }
  if (slot < 0)
    return;
  std::lock_guard<std::mutex> lock(regionsMutex);
  const char *name = regions[slot].path.exchange(nullptr);
  regions[slot].size.store(0);
  std::free(const_cast<char *>(name));
}

bool MappedInput::faulted() const {
  return slot >= 0 && regions[slot].faulted.load();
}

MappedInputOwner::MappedInputOwner(const void *owner)
    : previous(currentOwner) {
  currentOwner = owner;
}

MappedInputOwner::~MappedInputOwner() { currentOwner = previous; }

llvm::Error mlir::gptq::checkMappedInputsUnchanged(const void *owner) {
  std::lock_guard<std::mutex> lock(snapshotsMutex);
  for (const MappedInput *input : live()) {
    if (input->owner() != owner)
      continue;
    if (input->faulted())
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          input->path() + ": the file changed while it was read (cut short "
                          "or replaced during the call); the call's results "
                          "were discarded; open the module again");
    if (llvm::Error err = input->checkUnchanged()) {
      llvm::consumeError(std::move(err));
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          input->path() + ": the file changed while it was read (cut short, "
                          "replaced or written since the module was "
                          "opened); open the module again");
    }
  }
  return llvm::Error::success();
}

void mlir::gptq::openRunOfMappedInputs() {
  std::lock_guard<std::mutex> lock(snapshotsMutex);
  ++openRuns;
}

void mlir::gptq::closeRunOfMappedInputs() {
  std::lock_guard<std::mutex> lock(snapshotsMutex);
  if (--openRuns == 0)
    snapshots().clear();
}

llvm::Error mlir::gptq::checkMappedInputsUnchanged() {
  std::lock_guard<std::mutex> lock(snapshotsMutex);
  for (const MappedInput *input : live())
    if (llvm::Error err = input->checkUnchanged())
      return err;
  for (const FileIdentity &was : snapshots())
    if (llvm::Error err = was.checkUnchanged())
      return err;
  return llvm::Error::success();
}

void mlir::gptq::setFileThread(bool isFileThread) {
  if (isFileThread)
    fileThread = pthread_self();
  haveFileThread.store(isFileThread);
}

DeferInterrupts::DeferInterrupts() { deferDepth.fetch_add(1); }

DeferInterrupts::~DeferInterrupts() {
  if (deferDepth.fetch_sub(1) != 1)
    return;
  if (int signal = deferredSignal.exchange(0))
    ::raise(signal);
}
