//===- OutputTest.cpp - Output files that never lose data -----------------===//

#include "gptq/Execution/Output.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

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
