//===- NpzFuzzer.cpp - libFuzzer target: the .npz reader ------------------===//
//
// Feeds arbitrary bytes to parseNpz. Any input must give arrays or an
// error of one line; each array's data must agree with its header, and
// writing the arrays and reading them again must give them back (unless a
// name is one the writer refuses: empty or holding a NUL byte).
//
//===----------------------------------------------------------------------===//

#include "gptq/Execution/Npz.h"

#include <cstdint>
#include <cstdlib>

using namespace mlir::gptq;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  llvm::Expected<std::vector<NpzEntry>> entries = parseNpz(bytes, "input");
  if (!entries) {
    std::string message = llvm::toString(entries.takeError());
    if (message.find_first_of("\n\r") != std::string::npos)
      std::abort();
    return 0;
  }
  std::vector<NpzEntryRef> refs;
  bool writable = true;
  for (const NpzEntry &e : *entries) {
    std::optional<int64_t> expected =
        checkedByteCount(e.array.shape, dtypeSize(e.array.dtype));
    if (!expected || static_cast<uint64_t>(*expected) != e.array.data.size())
      std::abort();
    writable &= !e.name.empty() && e.name.find('\0') == std::string::npos;
    refs.push_back({e.name, &e.array});
  }
  llvm::Expected<std::string> written = serializeNpz(refs);
  if (!written) {
    llvm::consumeError(written.takeError());
    if (writable)
      std::abort();
    return 0;
  }
  llvm::Expected<std::vector<NpzEntry>> again = parseNpz(*written, "again");
  if (!again || again->size() != entries->size())
    std::abort();
  for (size_t i = 0; i < entries->size(); ++i) {
    const NpzEntry &a = (*entries)[i], &b = (*again)[i];
    if (a.name != b.name || a.array.dtype != b.array.dtype ||
        a.array.shape != b.array.shape || !(a.array.data == b.array.data))
      std::abort();
  }
  return 0;
}
