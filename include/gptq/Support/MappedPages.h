//===- MappedPages.h - Pages of read-only file mappings ---------*- C++ -*-===//
//
// The pages of the read-only file mappings a run holds (parameter archives,
// the quantized weights a pass keeps on disk): how the kernel maps them, and
// handing them back once read, so that a model's weights stop counting in
// the process's memory once used (pages used again are read from the file
// again).
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_SUPPORT_MAPPEDPAGES_H
#define GPTQ_SUPPORT_MAPPEDPAGES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace mlir {
namespace gptq {

/// Hands the whole pages of `data` back to the system when `data` lies in a
/// registered mapping (registerParameterMapping); other data is left alone.
/// The model pass calls it for each layer's weight once the layer is
/// quantized.
void releaseParameterPages(llvm::ArrayRef<char> data);

/// Records a read-only file mapping whose pages releaseParameterPages may
/// hand back (the archives loadParameters maps; a ScratchFile's mapping),
/// and forgets it (by its start) before it is unmapped.
void registerParameterMapping(llvm::StringRef mapping);
void unregisterParameterMapping(const char *start);

/// Asks the kernel to map the pages of `data` 2 MiB at a time: the pages it
/// reads from disk for the mapping then come in 2 MiB folios, mapped with
/// one TLB entry each. A decode step reads every weight once, and with 4 KiB
/// pages a 4-bit 1B model costs 170,000 TLB misses a step (about 10% of its
/// time here, docs/performance.md). Pages already cached stay as the kernel
/// holds them (the archive writers drop theirs once written: Output.cpp).
void adviseHugePages(llvm::StringRef data);

/// Asks the kernel to map the pages that lie wholly inside `data` 4 KiB at
/// a time, within a mapping adviseHugePages advised.
void adviseSmallPages(llvm::StringRef data);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_SUPPORT_MAPPEDPAGES_H
