//===- Checks.cpp - Run-time checks of compiled code ----------------------===//
//
// gptq_runtime_call_checked sets a jump point in a thread-local context;
// gptq_runtime_check_failed jumps back to it. Only compiled code (which has
// no destructors to run) lies between the two frames.
//
//===----------------------------------------------------------------------===//

#include "gptq/Runtime/Checks.h"

#include "gptq/Runtime/Allocator.h"

#include <atomic>
#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>

namespace {
struct CheckContext {
  std::jmp_buf jump;
  const char *volatile message = nullptr;
  uint64_t id = 0;
};

std::atomic<uint64_t> nextCall{1};

/// The innermost gptq_runtime_call_checked of this thread, if any.
thread_local CheckContext *current = nullptr;
} // namespace

extern "C" const char *gptq_runtime_call_checked(void (*fn)(void **),
                                                 void **args) {
  CheckContext context;
  context.id = nextCall.fetch_add(1, std::memory_order_relaxed);
  CheckContext *previous = current;
  current = &context;
  if (setjmp(context.jump) == 0)
    fn(args);
  current = previous;
  mlir::gptq::runtime::endCheckedCall(context.id,
                                      /*failed=*/context.message != nullptr);
  return context.message;
}

uint64_t mlir::gptq::runtime::currentCheckedCall() {
  return current ? current->id : 0;
}

bool mlir::gptq::runtime::inParallelRegion() {
  // The OpenMP runtime is loaded with compiled code, not linked here.
  using Level = int (*)();
  static std::atomic<Level> level{nullptr};
  Level f = level.load(std::memory_order_relaxed);
  if (!f) {
    f = reinterpret_cast<Level>(::dlsym(RTLD_DEFAULT, "omp_get_level"));
    if (!f)
      return false;
    level.store(f, std::memory_order_relaxed);
  }
  return f() > 0;
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
