//===- ModuleFile.h - Module files as the parser reads them -----*- C++ -*-===//
//
// MLIR's lexer, after an error token at the end of its buffer (a string
// literal cut off by the end of a truncated file), is asked for one more
// token and starts past the buffer's terminating NUL; it then skips NULs
// and reads whatever memory follows, until a fault (SIGSEGV when the mapped
// file ends at a page with nothing mapped after it). The tools therefore
// hand the parser module files through openModuleFile, whose buffer is
// followed by a guard page of '}' bytes: the stray token is a brace, the
// parse fails with the lexer's own diagnostic, and nothing past the guard
// is read.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_SUPPORT_MODULEFILE_H
#define GPTQ_SUPPORT_MODULEFILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <string>

namespace mlir {
namespace gptq {

/// Opens the module file `path` ("-" for stdin) for the parser: a regular
/// file is mapped (read in place, guarded by a MappedInput so that a file
/// that shrinks under the run is an error naming it), anything else read
/// into memory; either way the buffer ends with a NUL and a guard page (see
/// above). Returns null with `*error` set when the file cannot be read.
/// With `regularOnly` (a library's open, which must never block or read
/// without end), anything but a regular file is that error, found without
/// blocking: a FIFO is opened non-blocking and refused.
/// A module in another frontend's dialects (StableHLO, IREE's util.func)
/// comes back converted (FrontendInput.h).
std::unique_ptr<llvm::MemoryBuffer> openModuleFile(llvm::StringRef path,
                                                   std::string *error,
                                                   bool regularOnly = false);

/// A copy of `bytes` named `name`, ending with a NUL and a guard page as
/// openModuleFile's buffers do; null with `*error` set when out of memory.
std::unique_ptr<llvm::MemoryBuffer> guardedModuleBuffer(llvm::StringRef bytes,
                                                        llvm::StringRef name,
                                                        std::string *error);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_SUPPORT_MODULEFILE_H
