//===- ByteCount.h - Memory sizes as options give them ----------*- C++ -*-===//
//
// The byte counts of the model passes' memory options (activation-memory,
// hessian-memory): a size with a unit, or a share of physical memory.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_QUANTIZE_BYTECOUNT_H
#define GPTQ_QUANTIZE_BYTECOUNT_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace mlir {
namespace gptq {

/// Parses a byte count: a number with an optional suffix K, M, G or T
/// (powers of 1024, an optional B or iB after it) or a percentage of the
/// machine's physical memory ("25%"). std::nullopt when malformed.
std::optional<uint64_t> parseByteCount(llvm::StringRef text);

/// The machine's physical memory in bytes (0 when unknown).
uint64_t physicalMemoryBytes();

} // namespace gptq
} // namespace mlir

#endif // GPTQ_QUANTIZE_BYTECOUNT_H
