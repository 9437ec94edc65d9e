//===- NpyFuzzer.cpp - libFuzzer target: the .npy reader ------------------===//
//
// Feeds arbitrary bytes to parseNpy. Any input must give an array or an
// error; an array's header must agree with its data, and serializing and
// parsing it again must give it back.
//
//===----------------------------------------------------------------------===//

#include "gptq/Support/Npy.h"

#include <cstdint>
#include <cstdlib>

using namespace mlir::gptq;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  llvm::Expected<NpyArray> array = parseNpy(bytes, "input");
  if (!array) {
    llvm::consumeError(array.takeError());
    return 0;
  }
  std::optional<int64_t> expected =
      checkedByteCount(array->shape, dtypeSize(array->dtype));
  if (!expected || static_cast<uint64_t>(*expected) != array->data.size())
    std::abort();
  (void)array->describe();
  llvm::Expected<NpyArray> again = parseNpy(serializeNpy(*array), "again");
  if (!again || again->dtype != array->dtype || again->shape != array->shape ||
      !(again->data == array->data))
    std::abort();
  return 0;
}
