//===- Checks.h - Run-time checks of compiled code --------------*- C++ -*-===//
//
// Compiled gptq code checks at run time what the verifiers cannot check at
// compile time (dynamic sizes, index ranges, permutations): each check is a
// `cf.assert`, which `gptq-assert-to-runtime` lowers to a call of
// gptq_runtime_check_failed with the check's message ("file:line:col: op:
// relation") when it fails.
//
// A caller that wants failures back as values calls the compiled function
// through gptq_runtime_call_checked: a failed check on the calling thread
// returns there with its message (the JIT's CompiledFunction::call turns it
// into an error). Anywhere else (ahead-of-time code, another thread, inside
// a parallel region) a failed check prints "<program>: error: <message>" to
// stderr and exits with status 1.
//
// Running out of memory is such a failure too: the allocator (Allocator.h)
// reports "out of memory allocating a buffer of N bytes" through
// gptq_runtime_check_failed. The large buffers (1 MiB and more) that the
// calling thread allocated in the call, outside parallel regions, and that
// are still live when a check fails are freed before the caller gets the
// message; smaller ones are not.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_RUNTIME_CHECKS_H
#define GPTQ_RUNTIME_CHECKS_H

#include <cstdint>

extern "C" {
/// Calls `fn(args)`. Returns null when it returns normally, or the message
/// of the check that failed on this thread while it ran.
const char *gptq_runtime_call_checked(void (*fn)(void **), void **args);

/// Reports the failed check `message` and does not return: back to the
/// innermost gptq_runtime_call_checked of this thread unless `fatal` is
/// non-zero (the check runs in a parallel region) or there is none; else
/// prints the message and exits with status 1.
[[noreturn]] void gptq_runtime_check_failed(const char *message, int32_t fatal);
}

namespace mlir::gptq::runtime {
/// The innermost gptq_runtime_call_checked running on this thread, as a
/// number unique in the process; 0 when there is none.
uint64_t currentCheckedCall();
/// Whether this thread runs inside an OpenMP parallel region (compiled
/// code's worksharing loops), where a failure cannot jump back to the
/// caller.
bool inParallelRegion();
} // namespace mlir::gptq::runtime

#endif // GPTQ_RUNTIME_CHECKS_H
