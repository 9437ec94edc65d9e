//===- ByteCount.cpp - Memory sizes as options give them ------------------===//
//
// Parses the model passes' memory options (ByteCount.h).
//
//===----------------------------------------------------------------------===//

#include "gptq/Quantize/ByteCount.h"

#include "llvm/ADT/StringExtras.h"

#include <unistd.h>

using namespace mlir;
using namespace mlir::gptq;

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
