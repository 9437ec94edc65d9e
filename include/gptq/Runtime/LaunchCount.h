//===- LaunchCount.h - How many GPU kernels compiled code launched -*- C++ -*-===//
//
// Every kernel launch of compiled GPU code is counted, on a device
// (mgpuLaunchKernel in CudaRuntime.cpp) and emulated on the CPU (each
// gpu.launch that gptq-launches-to-cpu lowers calls
// gptq_runtime_count_launch before running its blocks): the number of
// launches a computation makes is a property of its schedule that tests
// check on machines without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_RUNTIME_LAUNCHCOUNT_H
#define GPTQ_RUNTIME_LAUNCHCOUNT_H

#include <cstdint>

extern "C" {
/// Counts one kernel launch (of this process, from any thread).
void gptq_runtime_count_launch();

/// The kernel launches this process has counted so far.
uint64_t gptq_runtime_launches();
}

#endif // GPTQ_RUNTIME_LAUNCHCOUNT_H
