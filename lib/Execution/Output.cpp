//===- Output.cpp - Output files that never lose data ---------------------===//

#include "gptq/Execution/Output.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

#include <unistd.h>

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
    llvm::consumeError(p.temp.discard());
  files.clear();
}

llvm::Error PendingOutputs::add(
    llvm::StringRef target,
    llvm::function_ref<llvm::Error(llvm::raw_ostream &)> write) {
  // A device or a pipe (/dev/null, /dev/stdout, a FIFO) is written as it
  // is: renaming a file onto it would replace the device itself, and it
  // holds no file that could be left partial.
  fs::file_status status;
  if (!fs::status(target, status) && fs::exists(status) &&
      status.type() != fs::file_type::regular_file &&
      status.type() != fs::file_type::directory_file) {
    std::error_code ec;
    llvm::raw_fd_ostream os(target, ec);
    if (ec)
      return cannotWrite(target, ec.message());
    return writeChecked(os, target, write);
  }
  // A hidden name in the same directory, so that the rename stays on one
  // file system.
  llvm::SmallString<256> model(path::parent_path(target));
  path::append(model, "." + path::filename(target) + ".tmp-%%%%%%%%");
  llvm::Expected<fs::TempFile> temp = fs::TempFile::create(model);
  if (!temp)
    return cannotWrite(target, llvm::toString(temp.takeError()));
  llvm::Error result = llvm::Error::success();
  {
    llvm::raw_fd_ostream os(temp->FD, /*shouldClose=*/false);
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
  files.push_back({target.str(), std::move(*temp)});
  return llvm::Error::success();
}

llvm::Error PendingOutputs::add(llvm::StringRef target, llvm::StringRef bytes) {
  return add(target, [&](llvm::raw_ostream &os) {
    os << bytes;
    return llvm::Error::success();
  });
}

llvm::Error PendingOutputs::commit() {
  for (size_t i = 0; i < files.size(); ++i) {
    if (llvm::Error err = files[i].temp.keep(files[i].path)) {
      llvm::Error failure =
          cannotWrite(files[i].path, llvm::toString(std::move(err)));
      // The files before this one are in place; this one's temporary (a
      // failed rename leaves it) and the rest are removed.
      files.erase(files.begin(), files.begin() + i);
      discard();
      return failure;
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
  for (const std::string &input : inputs) {
    bool same = false;
    if (!fs::equivalent(output, input, same) && same)
      return error("writing '" + output + "' would replace the input '" +
                   input + "'; choose another output");
  }
  return llvm::Error::success();
}
