//===- Scratch.cpp - Data kept on disk while a run makes it ---------------===//

#include "gptq/Support/Scratch.h"

#include "gptq/Support/MappedPages.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/mman.h>
#include <unistd.h>

using namespace mlir::gptq;

namespace {
llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}
} // namespace

llvm::Expected<std::unique_ptr<ScratchFile>>
ScratchFile::create(llvm::StringRef what) {
  std::unique_ptr<ScratchFile> file(new ScratchFile());
  file->what = what.str();
  llvm::SmallString<256> path;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "gptq-scratch", "bin", file->fd, path))
    return error("cannot create a scratch file for " + what + ": " +
                 ec.message());
  file->path = path.str().str();
  // Gone from the folder at once: the data lives as long as the descriptor
  // and the mapping, and nothing is left behind however the run ends.
  ::unlink(file->path.c_str());
  return file;
}

ScratchFile::~ScratchFile() {
  if (fd >= 0)
    ::close(fd);
}

llvm::Expected<uint64_t> ScratchFile::append(llvm::ArrayRef<char> data,
                                             uint64_t alignment) {
  if (mapping)
    return error("internal error: scratch file appended after mapping");
  uint64_t offset = (end + alignment - 1) / alignment * alignment;
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::pwrite(fd, data.data() + done, data.size() - done,
                         off_t(offset + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return error(path + ": cannot write " + what + " (" +
                   llvm::Twine(data.size()) + " bytes at " +
                   llvm::Twine(offset) + "): " +
                   std::strerror(n < 0 ? errno : ENOSPC));
    done += size_t(n);
  }
  end = offset + data.size();
  return offset;
}

llvm::Expected<std::shared_ptr<llvm::StringRef>> ScratchFile::map() {
  if (mapping)
    return mapping;
  if (end == 0)
    return mapping = std::make_shared<llvm::StringRef>();
  void *data = ::mmap(nullptr, end, PROT_READ, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED)
    return error(path + ": cannot map " + what + ": " + std::strerror(errno));
  llvm::StringRef bytes(static_cast<const char *>(data), end);
  registerParameterMapping(bytes);
  size_t size = end;
  mapping = std::shared_ptr<llvm::StringRef>(
      new llvm::StringRef(bytes), [size](llvm::StringRef *m) {
        unregisterParameterMapping(m->data());
        ::munmap(const_cast<char *>(m->data()), size);
        delete m;
      });
  return mapping;
}

llvm::Error ScratchFile::read(uint64_t offset,
                              llvm::MutableArrayRef<char> into) const {
  size_t done = 0;
  while (done < into.size()) {
    ssize_t n = ::pread(fd, into.data() + done, into.size() - done,
                        off_t(offset + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return error(path + ": cannot read back " + what + " (" +
                   llvm::Twine(into.size()) + " bytes at " +
                   llvm::Twine(offset) + "): " +
                   (n < 0 ? std::strerror(errno) : "the file is shorter"));
    done += size_t(n);
  }
  return llvm::Error::success();
}

void ScratchFile::discard(uint64_t offset, uint64_t size) {
  if (size)
    (void)::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                      off_t(offset), off_t(size));
}
