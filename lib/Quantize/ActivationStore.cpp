//===- ActivationStore.cpp - Calibration activations within a budget ------===//

#include "gptq/Quantize/ActivationStore.h"

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

uint64_t mlir::gptq::physicalMemoryBytes() {
  long pages = ::sysconf(_SC_PHYS_PAGES), size = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && size > 0 ? uint64_t(pages) * uint64_t(size) : 0;
}

std::optional<uint64_t> mlir::gptq::parseByteCount(llvm::StringRef text) {
  text = text.trim();
  if (text.consume_back("%")) {
    double percent;
    if (text.trim().getAsDouble(percent) || !(percent >= 0) || percent > 100)
      return std::nullopt;
    return uint64_t(double(physicalMemoryBytes()) * percent / 100);
  }
  // The suffix: K, M, G, T, with an optional B or iB.
  if (!text.consume_back_insensitive("ib"))
    text.consume_back_insensitive("b");
  uint64_t scale = 1;
  if (!text.empty()) {
    switch (llvm::toLower(text.back())) {
    case 'k': scale = 1ull << 10; break;
    case 'm': scale = 1ull << 20; break;
    case 'g': scale = 1ull << 30; break;
    case 't': scale = 1ull << 40; break;
    default: break;
    }
    if (scale != 1)
      text = text.drop_back();
  }
  text = text.trim();
  double value;
  if (text.empty() || text.getAsDouble(value) || !(value >= 0) ||
      value * double(scale) >= 9.0e18)
    return std::nullopt;
  return uint64_t(value * double(scale));
}
