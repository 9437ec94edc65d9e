//===- LaunchCount.cpp - How many GPU kernels compiled code launched ------===//

#include "gptq/Runtime/LaunchCount.h"

#include <atomic>

namespace {
std::atomic<uint64_t> launches{0};
} // namespace

extern "C" void gptq_runtime_count_launch() {
  launches.fetch_add(1, std::memory_order_relaxed);
}

extern "C" uint64_t gptq_runtime_launches() {
  return launches.load(std::memory_order_relaxed);
}
