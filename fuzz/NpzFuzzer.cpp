//===- NpzFuzzer.cpp - libFuzzer target: the .npz reader ------------------===//
//
// Feeds arbitrary bytes to parseNpz. Any input must give arrays or an
// error of one line; each array's data must agree with its header, and
// writing the arrays and reading them again must give them back (unless a
// name is one the writer refuses: empty or holding a NUL byte). Reading in
// place (parseNpzInPlace) must give the same arrays, pointing into the
// input, or fail where parseNpz fails or on a compressed member, with one
// line.
//
//===----------------------------------------------------------------------===//

#include "gptq/Support/Npz.h"

#include <cstdint>
#include <cstdlib>

using namespace mlir::gptq;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  llvm::Expected<std::vector<NpzEntry>> entries = parseNpz(bytes, "input");
  llvm::Expected<std::vector<NpzView>> views = parseNpzInPlace(bytes, "input");
  if (!views) {
    std::string message = llvm::toString(views.takeError());
    if (message.find_first_of("\n\r") != std::string::npos ||
        (entries && message.find("is compressed") == std::string::npos))
      std::abort();
  } else {
    if (!entries || views->size() != entries->size())
      std::abort();
    for (size_t i = 0; i < views->size(); ++i) {
      const NpzView &v = (*views)[i];
      const NpzEntry &e = (*entries)[i];
      if (v.name != e.name || v.array.dtype != e.array.dtype ||
          v.array.shape != e.array.shape ||
          v.array.data !=
              llvm::StringRef(e.array.data.data(), e.array.data.size()) ||
          (!v.array.data.empty() && (v.array.data.begin() < bytes.begin() ||
                                     v.array.data.end() > bytes.end())))
        std::abort();
    }
  }
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
