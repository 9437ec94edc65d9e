//===- OutputTest.cpp - Output files that never lose data -----------------===//

#include "gptq/Support/Output.h"
#include "gptq/Support/Signals.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <atomic>
#include <chrono>
#include <fcntl.h>
#include <fstream>
#include <sys/file.h>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

using namespace mlir::gptq;
namespace fs = llvm::sys::fs;

namespace {
/// A fresh directory, removed at the end of the test.
struct TempDir {
  TempDir() {
    EXPECT_FALSE(fs::createUniqueDirectory("gptq-output-test", path));
  }
  ~TempDir() { fs::remove_directories(path); }
  std::string file(llvm::StringRef name) const {
    llvm::SmallString<128> p(path);
    llvm::sys::path::append(p, name);
    return std::string(p);
  }
  /// The names in the directory, sorted.
  std::vector<std::string> list() const {
    std::vector<std::string> names;
    std::error_code ec;
    for (fs::directory_iterator it(path, ec), end; !ec && it != end;
         it.increment(ec))
      names.push_back(llvm::sys::path::filename(it->path()).str());
    std::sort(names.begin(), names.end());
    return names;
  }
  llvm::SmallString<128> path;
};

/// Whether an operation succeeded; a failure is consumed.
bool ok(llvm::Error err) {
  if (!err)
    return true;
  llvm::consumeError(std::move(err));
  return false;
}

std::string contents(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  return buffer ? (*buffer)->getBuffer().str() : "<missing>";
}
} // namespace

TEST(PendingOutputsTest, NothingAppearsBeforeTheCommit) {
  TempDir dir;
  ASSERT_TRUE(ok(writeFileAtomically(dir.file("a"), "old a")));
  {
    PendingOutputs outputs;
    ASSERT_TRUE(ok(outputs.add(dir.file("a"), "new a")));
    ASSERT_TRUE(ok(outputs.add(dir.file("b"), "new b")));
    // Written, but only as hidden temporaries.
    EXPECT_EQ(contents(dir.file("a")), "old a");
    EXPECT_EQ(contents(dir.file("b")), "<missing>");
    EXPECT_EQ(dir.list().size(), 3u);
  }
  // Destroyed without a commit: the temporaries are gone, "a" is intact.
  EXPECT_EQ(dir.list(), std::vector<std::string>{"a"});
  EXPECT_EQ(contents(dir.file("a")), "old a");

  PendingOutputs outputs;
  ASSERT_TRUE(ok(outputs.add(dir.file("a"), "new a")));
  ASSERT_TRUE(ok(outputs.add(dir.file("b"), "new b")));
  ASSERT_TRUE(ok(outputs.commit()));
  EXPECT_EQ(dir.list(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(contents(dir.file("a")), "new a");
  EXPECT_EQ(contents(dir.file("b")), "new b");
}

TEST(PendingOutputsTest, AFailedWriteDiscardsItsFile) {
  TempDir dir;
  PendingOutputs outputs;
  llvm::Error err = outputs.add(dir.file("a"), [](llvm::raw_ostream &os) {
    os << "half";
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "broken");
  });
  EXPECT_EQ(llvm::toString(std::move(err)), "broken");
  EXPECT_TRUE(dir.list().empty());
  // A missing directory: an error that names the file.
  err = outputs.add(dir.file("missing/a"), "x");
  EXPECT_NE(llvm::toString(std::move(err)).find("missing/a"),
            std::string::npos);
}

/// The write system calls this process has made (/proc/self/io), or -1.
long writeCalls() {
  std::ifstream io("/proc/self/io");
  std::string key;
  long value;
  while (io >> key >> value)
    if (key == "syscw:")
      return value;
  return -1;
}

TEST(PendingOutputsTest, LargeOutputsAreWrittenInWholePieces) {
  // An archive of many small tensors, as a quantized model's is: written
  // 8 MiB at a time (so that the page cache holds it in 2 MiB folios), not
  // in the stream's default pieces.
  if (writeCalls() < 0)
    GTEST_SKIP() << "no /proc/self/io";
  TempDir dir;
  PendingOutputs outputs;
  const size_t pieces = 2500, piece = 10000;
  std::string chunk(piece, 'x');
  long before = writeCalls();
  ASSERT_TRUE(ok(outputs.add(dir.file("big"), [&](llvm::raw_ostream &os) {
    for (size_t i = 0; i < pieces; ++i) {
      chunk[0] = char('a' + i % 26);
      os << chunk;
    }
    return llvm::Error::success();
  })));
  long calls = writeCalls() - before;
  // 25 MB: three writes (two of 8 MiB); slack for one split by the kernel.
  EXPECT_LE(calls, 4);
  EXPECT_GE(calls, 3);
  ASSERT_TRUE(ok(outputs.commit()));
  std::string written = contents(dir.file("big"));
  ASSERT_EQ(written.size(), pieces * piece);
  EXPECT_EQ(written[0], 'a');
  EXPECT_EQ(written[piece * 2499], char('a' + 2499 % 26));
}

TEST(OutputDirectoryTest, RefusesNamesThatWouldLoseData) {
  TempDir dir;
  ASSERT_TRUE(ok(writeFileAtomically(dir.file("w.npy"), "weights")));
  EXPECT_TRUE(ok(checkOutputDirectory(dir.path, "--out-dir")));
  EXPECT_TRUE(ok(checkOutputDirectory(dir.file("new/dir"), "--out-dir")));
  EXPECT_EQ(llvm::toString(checkOutputDirectory("", "--out-dir")),
            "--out-dir is empty (an unset variable?): name a directory");
  EXPECT_NE(llvm::toString(checkOutputDirectory(dir.file("w.npy"), "--o"))
                .find("exists and is not a directory"),
            std::string::npos);
  std::string other = dir.file("sub/../w.npy");
  ASSERT_TRUE(ok(createOutputDirectory(dir.file("sub"))));
  EXPECT_FALSE(ok(checkNotAnInput(other, {dir.file("w.npy")})));
  EXPECT_TRUE(ok(checkNotAnInput(dir.file("codes.npy"), {dir.file("w.npy")})));
}

TEST(RunFilesTest, SameFileSeesThroughSpellingsAndLinks) {
  TempDir dir;
  ASSERT_TRUE(ok(writeFileAtomically(dir.file("in"), "input")));
  ASSERT_FALSE(fs::create_link("in", dir.file("link")));
  ASSERT_FALSE(fs::create_directory(dir.file("sub")));
  EXPECT_TRUE(sameFile(dir.file("in"), dir.file("link")));
  EXPECT_TRUE(sameFile(dir.file("in"), dir.file("sub/../in")));
  // Names of files that do not exist yet: the same entry of one directory.
  EXPECT_TRUE(sameFile(dir.file("new"), dir.file("sub/../new")));
  EXPECT_TRUE(sameFile(dir.file("new"), dir.file("./new")));
  EXPECT_FALSE(sameFile(dir.file("new"), dir.file("sub/new")));
  EXPECT_FALSE(sameFile(dir.file("in"), dir.file("new")));
}

TEST(RunFilesTest, RefusesAnOutputThatIsAnInputOrAnotherOutput) {
  TempDir dir;
  ASSERT_TRUE(ok(writeFileAtomically(dir.file("m.mlir"), "module")));
  ASSERT_FALSE(fs::create_link("m.mlir", dir.file("link")));
  {
    RunFiles files;
    ASSERT_TRUE(ok(files.addInput(dir.file("m.mlir"), "the module")));
    EXPECT_FALSE(ok(files.addOutput(dir.file("link"), "report=")));
    ASSERT_TRUE(ok(files.addOutput(dir.file("r.json"), "report=")));
    EXPECT_FALSE(ok(files.addOutput(dir.file("./r.json"), "dump-stages=")));
    // An input named after the output it would be replaced by.
    EXPECT_FALSE(ok(files.addInput(dir.file("r.json"), "calibration=")));
    // A device takes several outputs.
    ASSERT_TRUE(ok(files.addOutput("/dev/null", "-o")));
    EXPECT_TRUE(ok(files.addOutput("/dev/null", "dump-hessians=")));
  }
  EXPECT_EQ(contents(dir.file("m.mlir")), "module");
}

TEST(RunFilesTest, AnInputMayBeReplacedByTheOutputNamedForIt) {
  TempDir dir;
  ASSERT_TRUE(ok(writeFileAtomically(dir.file("m.mlir"), "module")));
  RunFiles files;
  ASSERT_TRUE(ok(files.addInput(dir.file("m.mlir"), "the module", "-o")));
  EXPECT_TRUE(ok(files.addOutput(dir.file("m.mlir"), "-o")));
  EXPECT_FALSE(ok(files.addOutput(dir.file("m.mlir"), "report=")));
}

TEST(RunFilesTest, OutputsAreCommittedTogetherOrNotAtAll) {
  TempDir dir;
  {
    RunFiles files;
    ASSERT_TRUE(ok(files.outputs().add(dir.file("a"), "a")));
    ASSERT_TRUE(ok(files.outputs().add(dir.file("b"), "b")));
    // Only hidden temporaries before the commit, none after it is dropped.
  }
  EXPECT_TRUE(dir.list().empty());
  {
    RunFiles files;
    ASSERT_TRUE(ok(files.outputs().add(dir.file("a"), "a")));
    ASSERT_TRUE(ok(files.outputs().add(dir.file("b"), "b")));
    ASSERT_TRUE(ok(files.commit()));
  }
  EXPECT_EQ(dir.list(), (std::vector<std::string>{"a", "b"}));
}

TEST(RunFilesTest, NothingIsCommittedWhenAMappedInputChanged) {
  TempDir dir;
  ASSERT_TRUE(ok(writeFileAtomically(dir.file("w.npz"), "weights")));
  RunFiles files;
  {
    // Mapped, then unmapped: the run still remembers the file.
    MappedInput mapped(nullptr, 0, dir.file("w.npz"));
  }
  ASSERT_TRUE(ok(files.outputs().add(dir.file("out"), "out")));
  // Rewritten in place, to another size.
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(dir.file("w.npz"), ec);
    ASSERT_FALSE(ec);
    os << "other weights";
  }
  llvm::Error err = files.commit();
  ASSERT_TRUE(bool(err));
  EXPECT_NE(llvm::toString(std::move(err)).find("w.npz: the file changed"),
            std::string::npos);
  EXPECT_EQ(dir.list(), (std::vector<std::string>{"w.npz"}));
}

TEST(MappedInputTest, ALibrarysInputCutShortIsRecoveredAndReported) {
  TempDir dir;
  std::string path = dir.file("w.bin");
  long page = sysconf(_SC_PAGESIZE);
  ASSERT_TRUE(ok(writeFileAtomically(path, std::string(3 * page, 'x'))));
  int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  void *data = ::mmap(nullptr, 3 * page, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  ASSERT_NE(data, MAP_FAILED);
  int owner = 0;
  {
    MappedInputOwner owning(&owner);
    ensureMappedInputHandler();
    MappedInput input(data, 3 * page, path);
    EXPECT_FALSE(bool(checkMappedInputsUnchanged(&owner)));
    ASSERT_EQ(::truncate(path.c_str(), page), 0);
    // Past the new end: a SIGBUS, recovered from with zeros, not the end of
    // the process.
    volatile const char *bytes = static_cast<const char *>(data);
    EXPECT_EQ(bytes[0], 'x');
    EXPECT_EQ(bytes[2 * page + 5], 0);
    EXPECT_TRUE(input.faulted());
    llvm::Error err = checkMappedInputsUnchanged(&owner);
    ASSERT_TRUE(bool(err));
    EXPECT_NE(llvm::toString(std::move(err))
                  .find(path + ": the file changed while it was read"),
              std::string::npos);
    // Another owner's inputs are not this one's concern.
    int other = 0;
    EXPECT_FALSE(bool(checkMappedInputsUnchanged(&other)));
  }
  ::munmap(data, 3 * page);
}

TEST(PendingOutputsTest, CommitsOfOneDirectoryTakeTurns) {
  // Another run holds the directory's lock (it renames its own set of the
  // same names): this commit waits for it instead of mixing the two sets.
  TempDir dir;
  int held = ::open(dir.path.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);
  std::atomic<bool> committed{false};
  std::thread run([&] {
    PendingOutputs outputs;
    ASSERT_TRUE(ok(outputs.add(dir.file("model.mlir"), "model")));
    ASSERT_TRUE(ok(outputs.add(dir.file("report.json"), "{}")));
    ASSERT_TRUE(ok(outputs.commit()));
    committed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(committed.load());
  EXPECT_FALSE(fs::exists(dir.file("model.mlir")));
  ::close(held);
  run.join();
  EXPECT_TRUE(committed.load());
  EXPECT_TRUE(fs::exists(dir.file("report.json")));
}
