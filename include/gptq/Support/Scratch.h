//===- Scratch.h - Data kept on disk while a run makes it -------*- C++ -*-===//
//
// A run that makes more data than it should hold (a large model's
// quantized weights) appends it to a scratch file as it is made and reads
// it back through a read-only mapping: the pages count in the process's
// memory only while they are read, and releaseParameterPages hands them
// back; data read once (activations spilled for a later stage) is read
// back by copying and its space discarded. The file is unlinked as soon as it is created, so that nothing is
// left behind whatever ends the run (an error, a signal, SIGKILL).
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_SUPPORT_SCRATCH_H
#define GPTQ_SUPPORT_SCRATCH_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace mlir {
namespace gptq {

class ScratchFile {
public:
  /// A scratch file in the system's temporary folder ($TMPDIR, else /tmp);
  /// `what` names it in errors ("the quantized weights").
  static llvm::Expected<std::unique_ptr<ScratchFile>>
  create(llvm::StringRef what);
  ~ScratchFile();
  ScratchFile(const ScratchFile &) = delete;
  ScratchFile &operator=(const ScratchFile &) = delete;

  /// Appends `data` at the next multiple of `alignment` bytes; returns its
  /// offset. Fails, naming the file, when the write fails (a full disk).
  /// Not after map().
  llvm::Expected<uint64_t> append(llvm::ArrayRef<char> data,
                                  uint64_t alignment = 64);

  /// Maps what was written, read-only, and returns it; the mapping lives
  /// as long as the returned pointer (and the blobs that keep a copy of
  /// it), and its pages are handed back by releaseParameterPages. Calls
  /// after the first return the same mapping.
  llvm::Expected<std::shared_ptr<llvm::StringRef>> map();

  /// Reads back `into.size()` bytes that append() wrote at `offset` (by
  /// copying, without a mapping, so before or after map()). Fails, naming
  /// the file, when the read fails or comes up short.
  llvm::Error read(uint64_t offset, llvm::MutableArrayRef<char> into) const;

  /// Hands the disk space of `size` bytes at `offset` back to the file
  /// system (a hole: they read as zeros after); best effort, for data that
  /// will not be read again.
  void discard(uint64_t offset, uint64_t size);

  /// Bytes written so far.
  uint64_t size() const { return end; }

private:
  ScratchFile() = default;
  int fd = -1;
  uint64_t end = 0;
  std::string what, path;
  std::shared_ptr<llvm::StringRef> mapping;
};

} // namespace gptq
} // namespace mlir

#endif // GPTQ_SUPPORT_SCRATCH_H
