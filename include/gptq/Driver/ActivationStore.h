//===- ActivationStore.h - Calibration activations within a budget -*- C++ -*-===//
//
// The model pass keeps, between stages, the activations that cross them:
// every calibration batch's copy of each value a later stage reads. They
// stay in memory up to a budget (activation-memory=) and beyond it go to a
// scratch file (unlinked at once, so nothing is left however the run ends),
// read back one batch at a time when a stage needs them and discarded after
// their last reader. Results do not depend on where an array was kept.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_DRIVER_ACTIVATIONSTORE_H
#define GPTQ_DRIVER_ACTIVATIONSTORE_H

#include "gptq/Quantize/ByteCount.h"
#include "gptq/Support/Npy.h"
#include "gptq/Support/Scratch.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>

namespace mlir {
namespace gptq {

class ActivationStore {
public:
  /// One kept array: in memory, or its place in the scratch file.
  struct Kept {
    NpyArray memory;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    uint64_t offset = 0, bytes = 0;
    bool spilled = false, held = false;
  };

  /// Keeps at most `budget` bytes in memory.
  explicit ActivationStore(uint64_t budget) : budget(budget) {}

  /// Keeps `array` in memory while the budget allows, else on disk; fails,
  /// naming the file, when the disk is full.
  llvm::Error keep(Kept &slot, NpyArray array);
  /// The array of a slot: its memory, or read back into a new array.
  llvm::Expected<NpyArray> load(const Kept &slot) const;
  /// Forgets a slot's array (its memory freed, its disk space discarded).
  void release(Kept &slot);

  uint64_t residentBytes() const { return resident; }
  /// The most bytes held in memory at once, the most on disk at once, and
  /// all bytes written to disk.
  uint64_t peakResidentBytes() const { return peakResident; }
  uint64_t peakSpilledBytes() const { return peakSpilled; }
  uint64_t spilledBytes() const { return written; }

private:
  uint64_t budget;
  uint64_t resident = 0, onDisk = 0;
  uint64_t peakResident = 0, peakSpilled = 0, written = 0;
  std::unique_ptr<ScratchFile> file;
};

} // namespace gptq
} // namespace mlir

#endif // GPTQ_DRIVER_ACTIVATIONSTORE_H
