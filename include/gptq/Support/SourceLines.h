//===- SourceLines.h - Diagnostics without overlong source lines -*- C++ -*-===//
//
// MLIR's diagnostic handler prints the source line under a message. A
// module's line can be megabytes (a weight's hexadecimal blob) or kilobytes
// (the attributes of an import-hf module: its config and the Hugging Face
// name of every weight), so the tools print a diagnostic located on such a
// line with its location only.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_SUPPORT_SOURCELINES_H
#define GPTQ_SUPPORT_SOURCELINES_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir {
namespace gptq {

/// The longest source line a diagnostic shows under its message.
constexpr size_t kLongestShownLine = 240;

/// Whether line `line` (1-based) of `buffer` is longer than
/// kLongestShownLine characters. A line beyond the buffer is not.
bool isLongSourceLine(llvm::StringRef buffer, unsigned line);

/// Prints `diagnostic` and its notes as "FILE:LINE:COL: error: message", each
/// without its source line, to `os`.
void printWithoutSourceLines(Diagnostic &diagnostic, llvm::raw_ostream &os);

/// Registers on `context` a handler that prints the diagnostics located on
/// a long line of `buffer`, the text of the file `path`, with
/// printWithoutSourceLines to `os` (where the context's other diagnostics
/// go: stderr, or a library's collected messages), and leaves the others to
/// the handlers registered before it. A location counts when it is, or a
/// name, call-site or fused location holds first, a file location in
/// `path`. The handler lives as long as the context; `os` must too.
void registerLongLineHandler(MLIRContext *context, llvm::StringRef path,
                             llvm::StringRef buffer,
                             llvm::raw_ostream &os = llvm::errs());

} // namespace gptq
} // namespace mlir

#endif // GPTQ_SUPPORT_SOURCELINES_H
