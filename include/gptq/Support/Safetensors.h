//===- Safetensors.h - safetensors files and sharded indexes ----*- C++ -*-===//
//
// The format Hugging Face checkpoints keep their weights in: an 8-byte
// little-endian header length, a JSON header of tensor name -> {"dtype",
// "shape", "data_offsets"}, then the tensors' bytes. A checkpoint too large
// for one file is split into shards that `model.safetensors.index.json`
// lists: its "weight_map" maps each tensor name to the shard holding it.
// Modules refer to such tensors by name as their parameter archive (see
// Parameters.h); the tensors are read in place, in their stored dtype.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_SUPPORT_SAFETENSORS_H
#define GPTQ_SUPPORT_SAFETENSORS_H

#include "gptq/Support/Npy.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir {
namespace gptq {

/// The most bytes a safetensors header may have (the format's own limit).
constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;
/// The most bytes of an index file, and the deepest nesting of any JSON the
/// readers parse (a header or an index): as the Python readers bound them.
constexpr uint64_t kMaxIndexBytes = 64ull << 20;
constexpr unsigned kMaxJsonDepth = 64;

/// One tensor of a safetensors file, read in place.
struct SafetensorsTensor {
  std::string name;
  /// The dtype as the header spells it ("BF16").
  std::string dtype;
  /// The element type the tools read it as; none for a dtype they do not
  /// read (F8_E4M3, U16, U32, U64), which is an error only where such a
  /// tensor is used.
  std::optional<DType> element;
  std::vector<int64_t> shape;
  /// Its bytes, inside the parsed buffer.
  llvm::StringRef data;
};

/// The element type of a safetensors dtype name, when the tools read it:
/// F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL.
std::optional<DType> dtypeOfSafetensors(llvm::StringRef dtype);
/// The safetensors name of a dtype (its inverse).
llvm::StringRef safetensorsDTypeName(DType dtype);

/// Parses the safetensors file `bytes` (named `name` in errors) without
/// copying its tensors. As the format requires, and the Python reader
/// checks (gptq_mlir.files.inputs): a header length within the file and the
/// limit, a JSON object (at most kMaxJsonDepth deep, no repeated key) of
/// tensors and an optional "__metadata__" object of strings; each tensor a
/// known dtype, a shape of sizes >= 0 and data_offsets [begin, end] within
/// the data holding exactly its shape's bytes; the tensors covering the data
/// without gaps or overlaps. Errors are one line naming the file and, where
/// one is at fault, the tensor.
llvm::Expected<std::vector<SafetensorsTensor>>
parseSafetensors(llvm::StringRef bytes, llvm::StringRef name);

/// Parses an index file (`model.safetensors.index.json`): tensor name ->
/// shard file name, from its "weight_map". A shard's name must be a plain
/// file name (the shards lie beside the index). Errors name the index and
/// the tensor.
llvm::Expected<llvm::StringMap<std::string>>
parseSafetensorsIndex(llvm::StringRef bytes, llvm::StringRef name);

/// One tensor to write: its name, dtype, shape and bytes (which must be as
/// many as its shape's).
struct SafetensorsEntry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  llvm::ArrayRef<char> data;
};

/// The bytes of a safetensors file of `tensors` written to `os`: a header
/// padded so that the data starts on a 64-byte boundary, then the tensors,
/// those whose size is a multiple of 64 bytes first (each of them then
/// starts on a 64-byte boundary, as the JIT reads weights best), without
/// gaps, as the format requires. Fails when a name repeats. `written` (when
/// given) is called with each tensor once its bytes are written (to hand
/// back the pages of mapped data, say).
llvm::Error writeSafetensors(
    llvm::raw_ostream &os, llvm::ArrayRef<SafetensorsEntry> tensors,
    llvm::function_ref<void(const SafetensorsEntry &)> written = nullptr);

/// Checks the JSON text `text` before it is parsed: it nests no deeper than
/// `maxDepth` arrays and objects (the parser recurses once per level), and
/// no object repeats a key (the parser would keep one of them silently; keys
/// are compared as written). Returns what is wrong, or "".
std::string checkJsonStructure(llvm::StringRef text, unsigned maxDepth);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_SUPPORT_SAFETENSORS_H
