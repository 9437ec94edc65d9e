//===- FakeCudaDriver.h - A CUDA driver library for runtime tests -*- C++ -*-===//
//
// What the fake driver library counts, and how tests steer it.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_UNITTESTS_FAKECUDADRIVER_H
#define GPTQ_UNITTESTS_FAKECUDADRIVER_H

#include <cstdint>

struct FakeCudaCounts {
  uint64_t managedAllocations = 0; ///< successful cuMemAllocManaged calls
  uint64_t deviceAllocations = 0;  ///< successful cuMemAlloc calls
  uint64_t frees = 0;              ///< successful cuMemFree calls
  uint64_t liveBytes = 0;          ///< allocated and not freed
  uint64_t synchronizations = 0;   ///< cuCtxSynchronize calls
  uint64_t streamsCreated = 0;
  uint64_t streamsDestroyed = 0;
};

extern "C" {
using FakeCudaCountsFn = FakeCudaCounts (*)();
using FakeCudaSetCapacityFn = void (*)(uint64_t);
}

#endif // GPTQ_UNITTESTS_FAKECUDADRIVER_H
