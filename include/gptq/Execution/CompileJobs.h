//===- CompileJobs.h - Compile several modules at once ----------*- C++ -*-===//
//
// A tool that needs several compiled functions before its work starts (the
// calibration stages of --gptq-quantize-model and its layer quantizer)
// compiles them side by side: lowering and LLVM's code generation run on one
// thread per job up to the machine's threads, each thread with an
// MLIRContext of its own (an MLIRContext loads dialects and registers
// translations unsynchronized).
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_EXECUTION_COMPILEJOBS_H
#define GPTQ_EXECUTION_COMPILEJOBS_H

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mlir {
namespace gptq {

class CompiledFunction;
struct JitOptions;

/// A compilation: parses what it compiles into the context it is given (one
/// the thread running it owns), or into one of its own.
using CompileJob = std::function<llvm::Error(MLIRContext &)>;

/// Runs `jobs` on at most `threads` threads (0: the machine's hardware
/// threads), each job on one of them. The threads' contexts (tool contexts,
/// see makeToolContext) are appended to `contexts`: code compiled in one
/// reads its weights from it, so keep them while the code is used. Returns
/// the error of the first job, in the order given, that failed; all jobs
/// run whatever fails.
llvm::Error runCompileJobs(llvm::ArrayRef<CompileJob> jobs,
                           std::vector<std::shared_ptr<MLIRContext>> &contexts,
                           unsigned threads = 0);

/// Jobs that compile the function `entry` of each of `sources` (MLIR text
/// that the caller generated, a module each, named `bufferName` in
/// messages) in at most `groups` modules rather than one each: the sources
/// are dealt out largest first, each to the group with the least text so
/// far, and the sources of a group are parsed into one module, every symbol
/// of the i-th source renamed `<name>_<i>` so that the sources' symbols
/// stay apart, and compiled with CompiledFunction::compileEntries. So what
/// each module costs whatever its size is paid once per group, and the
/// groups still compile side by side. The i-th job's function goes to
/// `functions[i]` (resized to the sources); keep `sources` until the jobs
/// have run.
std::vector<CompileJob>
groupedCompileJobs(llvm::ArrayRef<std::string> sources,
                   llvm::StringRef bufferName, llvm::StringRef entry,
                   const JitOptions &options, unsigned groups,
                   std::vector<std::shared_ptr<CompiledFunction>> &functions);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_EXECUTION_COMPILEJOBS_H
