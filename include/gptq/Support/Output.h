//===- Output.h - Output files that never lose data -------------*- C++ -*-===//
//
// How the tools write files: every output is written to a temporary file
// beside its final name and renamed into place only when all of it was
// written (a full disk or any other write error leaves the old file, or no
// file, at that name); outputs never replace the tool's own inputs; output
// directories are created but never removed or emptied.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_SUPPORT_OUTPUT_H
#define GPTQ_SUPPORT_OUTPUT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
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
  /// or a pipe (/dev/null, a FIFO, or a link to one) is written in place,
  /// at the commit, and never replaced.
  /// The file gets `mode` less the umask (an executable: all_all).
  llvm::Error add(llvm::StringRef path,
                  llvm::function_ref<llvm::Error(llvm::raw_ostream &)> write,
                  unsigned mode = llvm::sys::fs::all_read |
                                  llvm::sys::fs::all_write);
  /// Adds a file with the given bytes.
  llvm::Error add(llvm::StringRef path, llvm::StringRef bytes,
                  unsigned mode = llvm::sys::fs::all_read |
                                  llvm::sys::fs::all_write);

  /// Renames every pending file onto its final name, in the order added,
  /// with SIGINT, SIGTERM and SIGHUP held back until the last rename, so
  /// that an interrupt leaves all of them or none, and with an exclusive
  /// flock() on each directory renamed into, so that another run committing
  /// files of the same names (a tool or a Python command) renames its set
  /// before or after this one, never between. Fails, writing nothing, when
  /// a mapped input changed during the run (checkMappedInputsUnchanged).
  llvm::Error commit();

  /// Removes every pending file.
  void discard();

private:
  struct Pending {
    std::string path;
    /// The temporary file; none for a device or a pipe, whose bytes wait
    /// in `bytes` for the commit.
    std::optional<llvm::sys::fs::TempFile> temp;
    std::string bytes;
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

/// Whether `a` and `b` name one file: the same file on disk when both exist
/// (through links, `./` and `..`, hard links), else the same name in the
/// same directory once the directory's links are resolved.
bool sameFile(llvm::StringRef a, llvm::StringRef b);

/// The files one run of a tool reads and writes. Each output is checked
/// when it is named, before any work: it must not be one of the run's
/// inputs nor another of its outputs (compared with sameFile). The outputs
/// are written into one PendingOutputs and committed together when the run
/// has done all its work, or not at all. A tool makes one for its run and
/// hands it to what reads and writes files for it (gptq-opt: to the
/// parameter archives' pass and, with attachRunFiles, to the model pass),
/// which add their inputs, outputs and files to it, so that they are
/// checked against the tool's own and committed with them. Without one (a
/// pass run from a library), such a pass checks and commits its own.
class RunFiles {
public:
  RunFiles();
  RunFiles(const RunFiles &) = delete;
  RunFiles &operator=(const RunFiles &) = delete;
  ~RunFiles();

  /// Records an input; `what` says what it is in messages ("the module",
  /// "calibration="). Fails when an output already named is that file,
  /// unless that output is the one named `replacedBy`: gptq-opt's -o may
  /// rewrite its input module in place (it is read whole first, and
  /// replaced whole by a rename), but nothing else may.
  llvm::Error addInput(llvm::StringRef path, llvm::StringRef what,
                       llvm::StringRef replacedBy = "");
  /// Records an output, or fails when it is an input or another output.
  llvm::Error addOutput(llvm::StringRef path, llvm::StringRef what);

  /// The files to commit together.
  PendingOutputs &outputs() { return pending; }
  /// Commits every pending file (see PendingOutputs::commit).
  llvm::Error commit() { return pending.commit(); }

private:
  struct File {
    std::string path, what, replacedBy;
  };
  std::vector<File> inputs, named;
  PendingOutputs pending;
};

} // namespace gptq
} // namespace mlir

#endif // GPTQ_SUPPORT_OUTPUT_H
