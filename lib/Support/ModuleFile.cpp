//===- ModuleFile.cpp - Module files as the parser reads them -------------===//

#include "gptq/Support/ModuleFile.h"

#include "gptq/Support/FrontendInput.h"
#include "gptq/Support/Signals.h"

#include "llvm/Support/Process.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlir::gptq;

namespace {
/// The bytes after the terminating NUL: each lexes as a '}' token, which
/// ends the lexer's stray read at once.
constexpr char kGuardByte = '}';

/// A buffer of `size` bytes at `base`, followed by a NUL and a guard page;
/// the whole span of `total` bytes is one mapping.
class ModuleFileBuffer : public llvm::MemoryBuffer {
public:
  ModuleFileBuffer(char *base, size_t size, size_t total, std::string name,
                   bool mapped)
      : base(base), total(total), name(std::move(name)) {
    init(base, base + size, /*RequiresNullTerminator=*/true);
    if (mapped)
      guard = std::make_unique<MappedInput>(base, size, this->name);
  }
  ~ModuleFileBuffer() override {
    guard.reset();
    ::munmap(base, total);
  }
  llvm::StringRef getBufferIdentifier() const override { return name; }
  BufferKind getBufferKind() const override { return MemoryBuffer_MMap; }

private:
  char *base;
  size_t total;
  std::string name;
  std::unique_ptr<MappedInput> guard;
};

size_t pageSize() { return size_t(llvm::sys::Process::getPageSizeEstimate()); }

size_t roundUp(size_t n, size_t page) { return (n + page - 1) / page * page; }

/// Anonymous memory of `total` bytes, or null.
char *reserve(size_t total) {
  void *p = ::mmap(nullptr, total, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<char *>(p);
}

/// Fills the guard after `size` bytes: a NUL, then guard bytes to the end
/// of the page after the one that holds the NUL.
void fillGuard(char *base, size_t size, size_t total) {
  base[size] = 0;
  std::memset(base + size + 1, kGuardByte, total - size - 1);
}

std::string errnoMessage() { return std::strerror(errno); }

/// Reads all of `fd` (a pipe, a device or stdin) into a guarded buffer.
std::unique_ptr<llvm::MemoryBuffer> readAll(int fd, const std::string &name,
                                            std::string *error) {
  auto read = llvm::MemoryBuffer::getOpenFile(fd, name, /*FileSize=*/-1,
                                              /*RequiresNullTerminator=*/false);
  if (!read) {
    *error = "cannot read '" + name + "': " + read.getError().message();
    return nullptr;
  }
  return guardedModuleBuffer((*read)->getBuffer(), name, error);
}
/// openModuleFile without the conversion of other frontends' dialects.
std::unique_ptr<llvm::MemoryBuffer>
openFile(llvm::StringRef path, std::string *error, bool regularOnly) {
  if (path == "-" && !regularOnly)
    return readAll(STDIN_FILENO, "<stdin>", error);
  std::string name = path.str();
  int fd = ::open(name.c_str(),
                  O_RDONLY | O_CLOEXEC | (regularOnly ? O_NONBLOCK : 0));
  if (fd < 0) {
    *error = "cannot open input file '" + name + "': " + errnoMessage();
    return nullptr;
  }
  struct stat status;
  if (::fstat(fd, &status) != 0) {
    *error = "cannot read '" + name + "': " + errnoMessage();
    ::close(fd);
    return nullptr;
  }
  if (S_ISDIR(status.st_mode)) {
    *error = "cannot read '" + name + "': it is a directory";
    ::close(fd);
    return nullptr;
  }
  if (regularOnly && !S_ISREG(status.st_mode)) {
    *error = "cannot read '" + name +
             "': not a regular file (a device, a pipe or a socket)";
    ::close(fd);
    return nullptr;
  }
  if (!S_ISREG(status.st_mode) || status.st_size == 0) {
    auto buffer = readAll(fd, name, error);
    ::close(fd);
    return buffer;
  }
  // The file's pages, then a page of anonymous memory for the guard (the
  // file's last page is zero past its end; when the file fills it, the
  // guard page's first byte is the terminating NUL).
  size_t size = size_t(status.st_size), page = pageSize();
  size_t filePages = roundUp(size, page);
  size_t total = filePages + page;
  char *base = reserve(total);
  if (!base) {
    *error = "cannot read '" + name + "': out of memory";
    ::close(fd);
    return nullptr;
  }
  void *mapped = ::mmap(base, size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
  int mapErrno = errno;
  ::close(fd);
  if (mapped == MAP_FAILED) {
    ::munmap(base, total);
    errno = mapErrno;
    *error = "cannot read '" + name + "': " + errnoMessage();
    return nullptr;
  }
  // The guard page: its first byte is the terminating NUL when the file
  // fills its last page; the lexer skips NULs either way.
  fillGuard(base + filePages, 0, page);
  ::mprotect(base + filePages, page, PROT_READ);
  return std::make_unique<ModuleFileBuffer>(base, size, total, name,
                                            /*mapped=*/true);
}
} // namespace

std::unique_ptr<llvm::MemoryBuffer>
mlir::gptq::guardedModuleBuffer(llvm::StringRef bytes, llvm::StringRef name,
                                std::string *error) {
  size_t total = roundUp(bytes.size() + 1, pageSize()) + pageSize();
  char *base = reserve(total);
  if (!base) {
    *error = "cannot read '" + name.str() + "': out of memory";
    return nullptr;
  }
  std::memcpy(base, bytes.data(), bytes.size());
  fillGuard(base, bytes.size(), total);
  return std::make_unique<ModuleFileBuffer>(base, bytes.size(), total,
                                            name.str(), /*mapped=*/false);
}

std::unique_ptr<llvm::MemoryBuffer>
mlir::gptq::openModuleFile(llvm::StringRef path, std::string *error,
                           bool regularOnly) {
  std::unique_ptr<llvm::MemoryBuffer> file = openFile(path, error, regularOnly);
  if (!file)
    return nullptr;
  return convertFrontendInput(std::move(file), error);
}
