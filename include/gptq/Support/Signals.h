//===- Signals.h - Signals that end a tool cleanly --------------*- C++ -*-===//
//
// The tools map their input files (modules, parameter archives, .npy and
// .npz files) and read them in place. A mapped file that shrinks under the
// run (truncated, or rewritten by `cp`) makes the next read of a page past
// its new end raise SIGBUS: the handler here turns that into one line naming
// the file, removes the run's temporary files and exits with status 1. It
// also holds back SIGINT, SIGTERM and SIGHUP while a set of outputs is being
// renamed into place, so that an interrupted run leaves the old set or the
// new one, never a mixture. Other signals go on to LLVM's handlers.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_SUPPORT_SIGNALS_H
#define GPTQ_SUPPORT_SIGNALS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstddef>
#include <string>

namespace mlir {
namespace gptq {

/// Installs the handlers, after LLVM's (InitLLVM), once per process.
/// `toolName` starts the messages they print.
void installToolSignalHandlers(const char *toolName);

/// Makes the calling thread the one that handles SIGINT, SIGTERM and SIGHUP
/// (`false`: any thread again). Signals that reach other threads are sent
/// on to it, so that the thread that creates the run's temporary files is
/// stopped while they are removed. The tools call it on the thread that
/// does their work, and with `false` when it is done.
void setFileThread(bool isFileThread);

/// A file as it was when it was read: its device, inode, size and
/// modification time (none when it could not be stat'ed).
struct FileIdentity {
  std::string path;
  bool known = false;
  unsigned long long device = 0, inode = 0, size = 0;
  long long modifiedNanoseconds = 0;

  static FileIdentity of(llvm::StringRef path);
  /// Whether `other` is this file at another time (or another spelling).
  bool sameFile(const FileIdentity &other) const;
  /// Fails, naming the file, when it is no longer this file (replaced,
  /// truncated, or written since).
  llvm::Error checkUnchanged() const;
};

/// A mapped input: while it lives, a SIGBUS at an address in [data, data +
/// size) ends the tool with "TOOL: error: PATH: the file changed while it
/// was read (cut short or replaced during the run); no output was written",
/// exit status 1, and the temporary files removed. It also records the
/// file's identity (device, inode, size, modification time) when made, so
/// that `checkUnchanged` can tell a file rewritten to the same size.
class MappedInput {
public:
  MappedInput(const void *data, size_t size, llvm::StringRef path);
  MappedInput(const MappedInput &) = delete;
  MappedInput &operator=(const MappedInput &) = delete;
  ~MappedInput();

  /// Fails, naming the file, when it is no longer the file that was mapped
  /// (replaced, truncated, or written since).
  llvm::Error checkUnchanged() const { return identity.checkUnchanged(); }

  /// Its owner (MappedInputOwner), or null for a tool's input.
  const void *owner() const { return ownerHandle; }
  /// Whether a SIGBUS at its pages was recovered from (MappedInputOwner).
  bool faulted() const;
  const std::string &path() const { return identity.path; }

private:
  int slot = -1;
  const void *ownerHandle = nullptr;
  FileIdentity identity;
};

/// While one lives, the MappedInputs made on the calling thread belong to
/// `owner` (the C API's module) and are recoverable: a SIGBUS inside one
/// (its file cut short under a call) does not end the process. The handler
/// maps zero pages from the faulting page to the end of the mapping, marks
/// the input as changed and lets the access go on; the owner's
/// checkMappedInputsUnchanged(owner) then fails naming the file, and the
/// results computed from the zeros are discarded. For libraries, whose
/// host process must outlive a file cut short under it. Owners nest.
class MappedInputOwner {
public:
  explicit MappedInputOwner(const void *owner);
  MappedInputOwner(const MappedInputOwner &) = delete;
  MappedInputOwner &operator=(const MappedInputOwner &) = delete;
  ~MappedInputOwner();

private:
  const void *previous;
};

/// Makes the handler of MappedInputs the process's SIGBUS handler, if it is
/// not (again: a library's host, or LLVM registering its own handlers, may
/// have replaced it since), chaining to the one it replaces for faults at
/// other addresses. Cheap: the C API calls it before every call.
void ensureMappedInputHandler();

/// Fails, naming the file, when one of `owner`'s live MappedInputs took a
/// SIGBUS or is no longer the file that was mapped (replaced, truncated, or
/// written since).
llvm::Error checkMappedInputsUnchanged(const void *owner);

/// Fails, naming the first, when a file mapped by a live MappedInput, or by
/// any MappedInput made while a run is open, has changed since it was
/// mapped. The tools check this before they commit their outputs: results
/// computed from a file that changed under the run are not written.
llvm::Error checkMappedInputsUnchanged();

/// A run of a tool opens (RunFiles does this): until it closes, the files
/// mapped in it are checked by checkMappedInputsUnchanged even after their
/// mappings are gone. Runs nest; the last to close forgets them.
void openRunOfMappedInputs();
void closeRunOfMappedInputs();

/// While one lives, SIGINT, SIGTERM and SIGHUP are held back: one that
/// arrives takes effect when the last DeferInterrupts ends. For the few
/// renames that put a set of outputs in place, and for the creation of a
/// temporary file (which a signal between its creation and its
/// registration for removal would leave behind). Used on the file thread.
class DeferInterrupts {
public:
  DeferInterrupts();
  DeferInterrupts(const DeferInterrupts &) = delete;
  DeferInterrupts &operator=(const DeferInterrupts &) = delete;
  ~DeferInterrupts();
};

} // namespace gptq
} // namespace mlir

#endif // GPTQ_SUPPORT_SIGNALS_H
