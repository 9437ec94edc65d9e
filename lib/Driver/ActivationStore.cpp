//===- ActivationStore.cpp - Calibration activations within a budget ------===//

#include "gptq/Driver/ActivationStore.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <unistd.h>

using namespace mlir::gptq;

llvm::Error ActivationStore::keep(Kept &slot, NpyArray array) {
  release(slot);
  uint64_t bytes = array.data.size();
  slot.dtype = array.dtype;
  slot.shape = array.shape;
  slot.bytes = bytes;
  slot.held = true;
  if (resident + bytes <= budget) {
    slot.memory = std::move(array);
    resident += bytes;
    peakResident = std::max(peakResident, resident);
    return llvm::Error::success();
  }
  if (!file) {
    auto made = ScratchFile::create("calibration activations "
                                    "(activation-memory= sets how many stay "
                                    "in memory)");
    if (!made)
      return made.takeError();
    file = std::move(*made);
  }
  auto at = file->append(llvm::ArrayRef<char>(array.data.data(), bytes));
  if (!at)
    return at.takeError();
  slot.offset = *at;
  slot.spilled = true;
  onDisk += bytes;
  written += bytes;
  peakSpilled = std::max(peakSpilled, onDisk);
  return llvm::Error::success();
}

llvm::Expected<NpyArray> ActivationStore::load(const Kept &slot) const {
  if (!slot.spilled)
    return slot.memory.borrowed(); // the slot keeps the data
  NpyArray a = NpyArray::zeros(slot.dtype, slot.shape);
  if (llvm::Error err = file->read(
          slot.offset, llvm::MutableArrayRef<char>(a.data.data(), slot.bytes)))
    return std::move(err);
  return a;
}

void ActivationStore::release(Kept &slot) {
  if (!slot.held)
    return;
  if (slot.spilled) {
    file->discard(slot.offset, slot.bytes);
    onDisk -= slot.bytes;
  } else {
    resident -= slot.bytes;
  }
  slot = Kept();
}
