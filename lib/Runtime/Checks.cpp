//===- Checks.cpp - Run-time checks of compiled code ----------------------===//
//
// gptq_runtime_call_checked sets a jump point in a thread-local context;
// gptq_runtime_check_failed jumps back to it. Only compiled code (which has
// no destructors to run) lies between the two frames.
//
//===----------------------------------------------------------------------===//

#include "gptq/Runtime/Checks.h"

#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>

namespace {
struct CheckContext {
  std::jmp_buf jump;
  const char *volatile message = nullptr;
};

/// The innermost gptq_runtime_call_checked of this thread, if any.
thread_local CheckContext *current = nullptr;
} // namespace

extern "C" const char *gptq_runtime_call_checked(void (*fn)(void **),
                                                 void **args) {
  CheckContext context;
  CheckContext *previous = current;
  current = &context;
  if (setjmp(context.jump) == 0)
    fn(args);
  current = previous;
  return context.message;
}

extern "C" void gptq_runtime_check_failed(const char *message, int32_t fatal) {
  if (CheckContext *context = current; context && !fatal) {
    context->message = message;
    std::longjmp(context->jump, 1);
  }
  std::fflush(stdout);
  std::fprintf(stderr, "%s: error: %s\n", program_invocation_short_name,
               message);
  std::fflush(stderr);
  // Other threads of a parallel region are still running: leave without
  // running exit handlers under them.
  if (fatal)
    std::_Exit(1);
  std::exit(1);
}
