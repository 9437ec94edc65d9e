//===- MappedPages.cpp - Pages of read-only file mappings
//------------------===//

#include "gptq/Support/MappedPages.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Process.h"

#include <mutex>
#include <sys/mman.h>
#include <vector>

namespace {
/// The live file mappings of parameter archives, whose pages
/// releaseParameterPages may hand back.
std::mutex mappingsMutex;
std::vector<llvm::StringRef> &mappings() {
  static std::vector<llvm::StringRef> live;
  return live;
}

/// madvise(`advice`) on the pages that `data` touches, or with `inside`
/// only on those that lie wholly inside it.
void advisePages(llvm::StringRef data, int advice, bool inside) {
  size_t page = llvm::sys::Process::getPageSizeEstimate();
  uintptr_t first = uintptr_t(data.data()), last = first + data.size();
  uintptr_t begin =
      inside ? llvm::alignTo(first, page) : llvm::alignDown(first, page);
  uintptr_t end =
      inside ? llvm::alignDown(last, page) : llvm::alignTo(last, page);
  if (begin < end)
    ::madvise(reinterpret_cast<void *>(begin), end - begin, advice);
}

} // namespace

void mlir::gptq::adviseHugePages(llvm::StringRef data) {
#ifdef MADV_HUGEPAGE
  advisePages(data, MADV_HUGEPAGE, /*inside=*/false);
#endif
}

void mlir::gptq::adviseSmallPages(llvm::StringRef data) {
#ifdef MADV_NOHUGEPAGE
  advisePages(data, MADV_NOHUGEPAGE, /*inside=*/true);
#endif
}

void mlir::gptq::registerParameterMapping(llvm::StringRef mapping) {
  std::lock_guard<std::mutex> lock(mappingsMutex);
  mappings().push_back(mapping);
}

void mlir::gptq::unregisterParameterMapping(const char *start) {
  std::lock_guard<std::mutex> lock(mappingsMutex);
  llvm::erase_if(mappings(),
                 [&](llvm::StringRef m) { return m.data() == start; });
}

void mlir::gptq::releaseParameterPages(llvm::ArrayRef<char> data) {
  if (data.empty())
    return;
  std::lock_guard<std::mutex> lock(mappingsMutex);
  for (llvm::StringRef m : mappings()) {
    if (data.data() < m.data() || data.end() > m.end())
      continue;
    // Whole pages only: a page may also hold the neighbouring tensors'
    // bytes, which stay.
    advisePages(llvm::StringRef(data.data(), data.size()), MADV_DONTNEED,
                /*inside=*/true);
    return;
  }
}
