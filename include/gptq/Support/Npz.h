//===- Npz.h - .npz archives of arrays --------------------------*- C++ -*-===//
//
// Reading and writing NumPy's .npz format: a zip archive of .npy members,
// one per array, each named after its key with a ".npy" suffix.
//
// Reading accepts what numpy.savez (stored members) and
// numpy.savez_compressed (deflated members) write, with ZIP64 records
// where the archive has them. Compressed members need zlib, which the
// build finds where LLVM's own build uses it; LLVM's compression wrapper
// cannot be used, as it reads only zlib-wrapped streams while zip members
// are raw deflate streams. Everything from the file is checked against its
// size before it is used: offsets, sizes, name lengths and extra fields;
// members may not overlap, and a deflated member's declared size may not
// exceed what deflate can expand its compressed bytes to. Each member is
// then parsed by parseNpy, with all of its checks.
//
// Writing makes an uncompressed archive that numpy.load reads, with ZIP64
// records for members, offsets or directories of 4 GiB - 1 bytes or more
// and for more than 65,534 members.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_SUPPORT_NPZ_H
#define GPTQ_SUPPORT_NPZ_H

#include "gptq/Support/Npy.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir {
namespace gptq {

class PendingOutputs;

/// One array of an archive. `name` is the member's name without its
/// ".npy" suffix: the key numpy.load gives it.
struct NpzEntry {
  std::string name;
  NpyArray array;
};

/// An array to write, by reference, so that writing needs no copy of it
/// (`array` must not be null).
struct NpzEntryRef {
  llvm::StringRef name;
  const NpyArray *array;
};

/// Parses the bytes of an .npz archive; `name` (the file) is used in
/// error messages. The entries come in archive order. Errors are one line
/// naming `name` and, where one is at fault, the member: not a zip archive,
/// truncated, a member that is not a .npy (its name lacks the suffix), a bad
/// CRC-32, an unsupported compression method or an encrypted member, a
/// duplicate name, a malformed .npy inside, or sizes and offsets beyond the
/// file.
llvm::Expected<std::vector<NpzEntry>> parseNpz(llvm::StringRef bytes,
                                               llvm::StringRef name);

/// One array of an archive, read in place (see parseNpzInPlace).
struct NpzView {
  std::string name;
  NpyView array;
};

/// Parses an .npz archive as parseNpz does, with all of its checks (the
/// CRC-32s included), without copying the arrays: their data points into
/// `bytes`, which must outlive the views. Compressed members are refused
/// (one line naming the member), since they cannot be read in place.
llvm::Expected<std::vector<NpzView>> parseNpzInPlace(llvm::StringRef bytes,
                                                     llvm::StringRef name);

/// Reads every member of an .npz file (see parseNpz).
llvm::Expected<std::vector<NpzEntry>> readNpz(llvm::StringRef path);

/// The bytes of an uncompressed .npz archive of `entries`, in that order.
/// Fails when a name is empty, repeated, longer than 65,531 bytes or holds
/// a NUL byte, or when an array's data is not as long as its dtype and
/// shape say.
llvm::Expected<std::string> serializeNpz(llvm::ArrayRef<NpzEntryRef> entries);

/// Writes `entries`, in that order, as an uncompressed .npz archive that
/// numpy.load reads, through `outputs`: nothing appears at `path` until
/// outputs.commit(). Fails, naming `path` and adding nothing to `outputs`,
/// on the entries serializeNpz refuses, and as PendingOutputs::add does
/// (e.g. on a full disk).
llvm::Error writeNpz(PendingOutputs &outputs, llvm::StringRef path,
                     llvm::ArrayRef<NpzEntry> entries);
/// The same, for arrays held elsewhere.
llvm::Error writeNpz(PendingOutputs &outputs, llvm::StringRef path,
                     llvm::ArrayRef<NpzEntryRef> entries);

namespace detail {
/// Writes as writeNpz does, with ZIP64 records for any size or offset of
/// `zip64Limit` bytes or more (0xFFFFFFFF in writeNpz), so that tests can
/// exercise them on small arrays.
llvm::Error writeNpz(llvm::raw_ostream &os, llvm::ArrayRef<NpzEntryRef> entries,
                     uint64_t zip64Limit);
} // namespace detail

} // namespace gptq
} // namespace mlir

#endif // GPTQ_SUPPORT_NPZ_H
