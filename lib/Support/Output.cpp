//===- Output.cpp - Output files that never lose data ---------------------===//

#include "gptq/Support/Output.h"

#include "gptq/Support/Signals.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>
#include <vector>

using namespace mlir::gptq;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

namespace {
llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Error cannotWrite(llvm::StringRef target, const llvm::Twine &why) {
  return error("cannot write '" + target + "': " + why);
}

/// Runs `write` on `os`, then flushes and checks the stream: a write that
/// failed (a full disk, a file-size limit) is an error naming `target`.
llvm::Error
writeChecked(llvm::raw_fd_ostream &os, llvm::StringRef target,
             llvm::function_ref<llvm::Error(llvm::raw_ostream &)> write) {
  llvm::Error result = write(os);
  os.flush();
  if (!result && os.has_error())
    result = cannotWrite(target, os.error().message());
  os.clear_error();
  return result;
}
} // namespace

PendingOutputs::~PendingOutputs() { discard(); }

void PendingOutputs::discard() {
  for (Pending &p : files)
    if (p.temp)
      llvm::consumeError(p.temp->discard());
  files.clear();
}

namespace {
/// The size of the pieces outputs are written in.
constexpr size_t kWriteBuffer = size_t(8) << 20;

/// Whether `target` is a device or a pipe (also through a link): a file
/// that is written in place, never renamed over.
bool isSpecial(llvm::StringRef target) {
  fs::file_status status;
  return !fs::status(target, status) && fs::exists(status) &&
         status.type() != fs::file_type::regular_file &&
         status.type() != fs::file_type::directory_file;
}
} // namespace

llvm::Error PendingOutputs::add(
    llvm::StringRef target,
    llvm::function_ref<llvm::Error(llvm::raw_ostream &)> write,
    unsigned mode) {
  // A device or a pipe (/dev/null, /dev/stdout, a FIFO) is written as it
  // is, at the commit: renaming a file onto it would replace the device
  // itself, and it holds no file that could be left partial.
  if (isSpecial(target)) {
    std::string bytes;
    llvm::raw_string_ostream os(bytes);
    if (llvm::Error err = write(os))
      return err;
    files.push_back({target.str(), std::nullopt, std::move(bytes)});
    return llvm::Error::success();
  }
  // A hidden name in the same directory, so that the rename stays on one
  // file system.
  llvm::SmallString<256> model(path::parent_path(target));
  path::append(model, "." + path::filename(target) + ".tmp-%%%%%%%%");
  // Created and registered for removal on a signal with interrupts held
  // back: one between the two would leave the file behind.
  std::optional<DeferInterrupts> creating(std::in_place);
  llvm::Expected<fs::TempFile> temp = fs::TempFile::create(model, mode);
  creating.reset();
  if (!temp)
    return cannotWrite(target, llvm::toString(temp.takeError()));
  llvm::Error result = llvm::Error::success();
  {
    llvm::raw_fd_ostream os(temp->FD, /*shouldClose=*/false);
    // Written 8 MiB at a time, at offsets that are multiples of 8 MiB: the
    // page cache then holds the file in 2 MiB folios, which a reader maps
    // with one TLB entry each (a parameter archive is mapped and read whole
    // for every decoded token). Written in the stream's default pieces (4
    // KiB and odd sizes), the file stays cached in 4 KiB pages: a 4-bit 1B
    // model decoded about 10% slower from it (docs/performance.md).
    os.SetBufferSize(kWriteBuffer);
    result = writeChecked(os, target, write);
  }
  // On disk before it is renamed into place, so that a crash of the machine
  // cannot leave a renamed but empty file either.
  if (!result && ::fsync(temp->FD) != 0)
    result = cannotWrite(
        target, std::error_code(errno, std::generic_category()).message());
  if (result) {
    llvm::consumeError(temp->discard());
    return result;
  }
  files.push_back({target.str(), std::move(*temp), std::string()});
  return llvm::Error::success();
}

llvm::Error PendingOutputs::add(llvm::StringRef target, llvm::StringRef bytes,
                                unsigned mode) {
  return add(
      target,
      [&](llvm::raw_ostream &os) {
        os << bytes;
        return llvm::Error::success();
      },
      mode);
}

namespace {
/// Exclusive flock()s on the directories that a set of outputs is renamed
/// into, held while the set is renamed: two runs (of any of the tools or
/// the Python commands, which lock the same way) that commit outputs of the
/// same names then rename their sets one after the other, and never leave
/// one run's model beside another's report. Directories are locked in the
/// order of their device and inode, so that two runs cannot deadlock.
class DirectoryLocks {
public:
  explicit DirectoryLocks(llvm::ArrayRef<std::string> targets) {
    std::vector<std::pair<std::pair<dev_t, ino_t>, int>> dirs;
    for (const std::string &target : targets) {
      llvm::SmallString<256> dir(path::parent_path(target));
      if (dir.empty())
        dir = ".";
      int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      struct stat status;
      if (fd < 0)
        continue; // Unreadable: renamed without the lock.
      if (::fstat(fd, &status) != 0 ||
          llvm::any_of(dirs, [&](const auto &d) {
            return d.first == std::make_pair(status.st_dev, status.st_ino);
          })) {
        ::close(fd);
        continue;
      }
      dirs.push_back({{status.st_dev, status.st_ino}, fd});
    }
    llvm::sort(dirs);
    for (auto &[id, fd] : dirs) {
      while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
      }
      fds.push_back(fd);
    }
  }
  DirectoryLocks(const DirectoryLocks &) = delete;
  DirectoryLocks &operator=(const DirectoryLocks &) = delete;
  ~DirectoryLocks() {
    for (int fd : fds)
      ::close(fd); // Releases its lock.
  }

private:
  std::vector<int> fds;
};
} // namespace

llvm::Error PendingOutputs::commit() {
  // Results computed from a file that changed under the run are not kept.
  if (llvm::Error err = checkMappedInputsUnchanged()) {
    discard();
    return err;
  }
  DeferInterrupts interrupts;
  std::vector<std::string> renamed;
  for (const Pending &p : files)
    if (p.temp)
      renamed.push_back(p.path);
  DirectoryLocks locks(renamed);
  for (size_t i = 0; i < files.size(); ++i) {
    Pending &p = files[i];
    llvm::Error err = llvm::Error::success();
    if (p.temp) {
      if (llvm::Error kept = p.temp->keep(p.path))
        err = cannotWrite(p.path, llvm::toString(std::move(kept)));
    } else {
      std::error_code ec;
      llvm::raw_fd_ostream os(p.path, ec);
      if (ec)
        err = cannotWrite(p.path, ec.message());
      else
        err = writeChecked(os, p.path, [&](llvm::raw_ostream &out) {
          out << p.bytes;
          return llvm::Error::success();
        });
    }
    if (err) {
      // The files before this one are in place; this one's temporary (a
      // failed rename leaves it) and the rest are removed.
      files.erase(files.begin(), files.begin() + i);
      discard();
      return err;
    }
  }
  files.clear();
  return llvm::Error::success();
}

llvm::Error mlir::gptq::writeFileAtomically(
    llvm::StringRef path,
    llvm::function_ref<llvm::Error(llvm::raw_ostream &)> write) {
  PendingOutputs outputs;
  if (llvm::Error err = outputs.add(path, write))
    return err;
  return outputs.commit();
}

llvm::Error mlir::gptq::writeFileAtomically(llvm::StringRef path,
                                            llvm::StringRef bytes) {
  return writeFileAtomically(path, [&](llvm::raw_ostream &os) {
    os << bytes;
    return llvm::Error::success();
  });
}

llvm::Error mlir::gptq::checkOutputDirectory(llvm::StringRef dir,
                                             llvm::StringRef option) {
  if (dir.empty())
    return error(option + " is empty (an unset variable?): name a directory");
  fs::file_status status;
  // fs::status follows links: a link to a directory is written through.
  if (std::error_code ec = fs::status(dir, status)) {
    if (ec == std::errc::no_such_file_or_directory)
      return llvm::Error::success();
    return error("cannot use '" + dir + "' as " + option + ": " + ec.message());
  }
  if (!fs::is_directory(status))
    return error(option + " '" + dir +
                 "' exists and is not a directory; name a directory");
  return llvm::Error::success();
}

llvm::Error mlir::gptq::createOutputDirectory(llvm::StringRef dir) {
  // LLVM's default (0770) would ignore a umask that lets others read.
  if (std::error_code ec =
          fs::create_directories(dir, /*IgnoreExisting=*/true, fs::all_all))
    return error("cannot create directory '" + dir + "': " + ec.message());
  return llvm::Error::success();
}

llvm::Error mlir::gptq::checkNotAnInput(llvm::StringRef output,
                                        llvm::ArrayRef<std::string> inputs) {
  for (const std::string &input : inputs)
    if (sameFile(output, input))
      return error("writing '" + output + "' would replace the input '" +
                   input + "'; choose another output");
  return llvm::Error::success();
}

bool mlir::gptq::sameFile(llvm::StringRef a, llvm::StringRef b) {
  bool same = false;
  if (!fs::equivalent(a, b, same))
    return same;
  // One of them does not exist (yet): the same name in the same directory.
  auto entry = [](llvm::StringRef p) {
    llvm::SmallString<256> parent(path::parent_path(p));
    if (parent.empty())
      parent = ".";
    llvm::SmallString<256> real;
    if (fs::real_path(parent, real)) {
      real = parent;
      fs::make_absolute(real);
    }
    path::remove_dots(real, /*remove_dot_dot=*/true);
    path::append(real, path::filename(p));
    return std::string(real);
  };
  return entry(a) == entry(b);
}

RunFiles::RunFiles() { openRunOfMappedInputs(); }

RunFiles::~RunFiles() { closeRunOfMappedInputs(); }

llvm::Error RunFiles::addInput(llvm::StringRef path, llvm::StringRef what,
                               llvm::StringRef replacedBy) {
  if (path.empty() || path == "-")
    return llvm::Error::success();
  for (const File &output : named)
    if ((replacedBy.empty() || output.what != replacedBy) &&
        sameFile(output.path, path))
      return error("writing '" + output.path + "' (" + output.what +
                   ") would replace the input '" + path + "' (" + what +
                   "); choose another output");
  inputs.push_back({path.str(), what.str(), replacedBy.str()});
  return llvm::Error::success();
}

llvm::Error RunFiles::addOutput(llvm::StringRef path, llvm::StringRef what) {
  if (path.empty())
    return error(what + " is empty (an unset variable?): name a file");
  if (path == "-")
    return llvm::Error::success();
  for (const File &input : inputs)
    if ((input.replacedBy.empty() || input.replacedBy != what) &&
        sameFile(path, input.path))
      return error("writing '" + path + "' (" + what +
                   ") would replace the input '" + input.path + "' (" +
                   input.what + "); choose another output");
  // A device is no file to lose: /dev/null may take several outputs.
  bool special = isSpecial(path);
  for (const File &output : named)
    if (!special && sameFile(path, output.path))
      return error("'" + path + "' (" + what + ") and '" + output.path +
                   "' (" + output.what +
                   ") are the same file; name different files");
  named.push_back({path.str(), what.str(), std::string()});
  return llvm::Error::success();
}
