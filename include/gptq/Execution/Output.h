//===- Output.h - Output files that never lose data -------------*- C++ -*-===//
//
// How the tools write files: every output is written to a temporary file
// beside its final name and renamed into place only when all of it was
// written (a full disk or any other write error leaves the old file, or no
// file, at that name); outputs never replace the tool's own inputs; output
// directories are created but never removed or emptied.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_EXECUTION_OUTPUT_H
#define GPTQ_EXECUTION_OUTPUT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir {
namespace gptq {

/// A set of output files written together: each `add` writes one into a
/// temporary file beside its final name, `commit` renames them all into
/// place. Until the commit nothing exists at the final names; whatever is
/// not committed is removed (also when the process is killed by a signal).
class PendingOutputs {
public:
  PendingOutputs() = default;
  PendingOutputs(const PendingOutputs &) = delete;
  PendingOutputs &operator=(const PendingOutputs &) = delete;
  ~PendingOutputs();

  /// Writes the contents of `path` (as `write` produces them) into a
  /// temporary file in the same directory, which must exist. Fails, naming
  /// `path`, when the file cannot be created or any write fails (e.g. a
  /// full disk); the temporary is then removed. A `path` that is a device
  /// or a pipe (/dev/null, a FIFO) is written directly, at once.
  llvm::Error add(llvm::StringRef path,
                  llvm::function_ref<llvm::Error(llvm::raw_ostream &)> write);
  /// Adds a file with the given bytes.
  llvm::Error add(llvm::StringRef path, llvm::StringRef bytes);

  /// Renames every pending file onto its final name, in the order added.
  llvm::Error commit();

  /// Removes every pending file.
  void discard();

private:
  struct Pending {
    std::string path;
    llvm::sys::fs::TempFile temp;
  };
  std::vector<Pending> files;
};

/// Writes one file atomically (a PendingOutputs of one file).
llvm::Error
writeFileAtomically(llvm::StringRef path,
                    llvm::function_ref<llvm::Error(llvm::raw_ostream &)> write);

/// Writes one file of the given bytes atomically.
llvm::Error writeFileAtomically(llvm::StringRef path, llvm::StringRef bytes);

/// Checks, without changing anything, that `dir` can serve as an output
/// directory: a non-empty name of an existing directory (or of a link to
/// one), or of nothing yet. `option` names the option in messages.
llvm::Error checkOutputDirectory(llvm::StringRef dir, llvm::StringRef option);

/// Creates `dir` and its missing parents (mode 0777 less the umask).
llvm::Error createOutputDirectory(llvm::StringRef dir);

/// Fails when writing `output` would replace one of `inputs` (the same file,
/// also through links or other spellings of its path).
llvm::Error checkNotAnInput(llvm::StringRef output,
                            llvm::ArrayRef<std::string> inputs);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_EXECUTION_OUTPUT_H
