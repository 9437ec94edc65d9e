//===- NpyTest.cpp - .npy reading and writing -----------------------------===//

#include "gptq/Execution/Npy.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdlib>
#include <cstring>
#include <gtest/gtest.h>

using namespace mlir::gptq;

namespace {
std::string errorOf(llvm::Expected<NpyArray> r) {
  if (r)
    return "";
  return llvm::toString(r.takeError());
}

TEST(NpyTest, RoundTripsEveryDType) {
  for (DType t : {DType::F32, DType::F64, DType::I8, DType::U8, DType::I16,
                  DType::I32, DType::I64, DType::Bool}) {
    NpyArray a = NpyArray::zeros(t, {2, 3});
    for (size_t i = 0; i < a.data.size(); ++i)
      a.data[i] = static_cast<char>(i * 7 + 1);
    auto b = parseNpy(serializeNpy(a), "mem");
    ASSERT_TRUE(static_cast<bool>(b)) << dtypeName(t).str();
    EXPECT_EQ(b->dtype, t);
    EXPECT_EQ(b->shape, a.shape);
    EXPECT_EQ(b->data, a.data);
  }
}

int releases = 0;
void countRelease(void *p) {
  ++releases;
  std::free(p);
}

TEST(NpyBufferTest, CopiesAreDeepAndAdoptedBuffersAreReleasedOnce) {
  NpyBuffer zeros(5);
  EXPECT_EQ(zeros.size(), 5u);
  for (char c : zeros)
    EXPECT_EQ(c, 0);
  NpyBuffer copy = zeros;
  copy[0] = 7;
  EXPECT_EQ(zeros[0], 0);
  EXPECT_FALSE(copy == zeros);

  releases = 0;
  {
    auto *raw = static_cast<char *>(std::malloc(16));
    std::memset(raw, 3, 16);
    // The data may start inside the allocation.
    NpyBuffer adopted = NpyBuffer::adopt(raw + 8, 8, raw, countRelease);
    EXPECT_EQ(adopted.data(), raw + 8);
    NpyBuffer deep = adopted;
    EXPECT_NE(deep.data(), adopted.data());
    EXPECT_TRUE(deep == adopted);
    NpyBuffer moved = std::move(adopted);
    EXPECT_EQ(moved.data(), raw + 8);
    EXPECT_EQ(adopted.size(), 0u);
    EXPECT_EQ(releases, 0);
    moved = NpyBuffer(2);
    EXPECT_EQ(releases, 1);
  }
  EXPECT_EQ(releases, 1);
}

TEST(NpyTest, HeaderIsAlignedAndScalarShapeWorks) {
  NpyArray a = NpyArray::zeros(DType::F32, {});
  std::string bytes = serializeNpy(a);
  EXPECT_EQ((bytes.size() - 4) % 64, 0u);
  auto b = parseNpy(bytes, "mem");
  ASSERT_TRUE(static_cast<bool>(b));
  EXPECT_TRUE(b->shape.empty());
  EXPECT_EQ(b->numElements(), 1);
  NpyArray v = NpyArray::zeros(DType::I32, {5});
  auto w = parseNpy(serializeNpy(v), "mem");
  ASSERT_TRUE(static_cast<bool>(w));
  EXPECT_EQ(w->shape, std::vector<int64_t>{5});
}

TEST(NpyTest, RejectsBadFiles) {
  NpyArray a = NpyArray::zeros(DType::F32, {4, 4});
  std::string good = serializeNpy(a);
  EXPECT_NE(errorOf(parseNpy("hello", "x.npy")).find("not a .npy file"),
            std::string::npos);
  EXPECT_NE(errorOf(parseNpy(good.substr(0, good.size() - 3), "x.npy"))
                .find("truncated or corrupt"),
            std::string::npos);
  EXPECT_NE(errorOf(parseNpy(good.substr(0, 12), "x.npy")).find("truncated"),
            std::string::npos);
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  EXPECT_NE(errorOf(parseNpy(fortran, "x.npy")).find("Fortran"),
            std::string::npos);
  std::string bigEndian = good;
  bigEndian.replace(bigEndian.find("<f4"), 3, ">f4");
  EXPECT_NE(errorOf(parseNpy(bigEndian, "x.npy")).find("unsupported dtype"),
            std::string::npos);
  std::string complex = good;
  complex.replace(complex.find("<f4"), 3, "<c8");
  EXPECT_NE(errorOf(parseNpy(complex, "x.npy")).find("'<c8'"),
            std::string::npos);
  EXPECT_NE(errorOf(readNpy("/nonexistent/file.npy")).find("cannot read"),
            std::string::npos);
}

TEST(NpyTest, FilesRoundTripAndReadArraysAreWritable) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("npytest", dir));
  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, "a.npy");
  NpyArray a = NpyArray::zeros(DType::F32, {3, 5});
  for (int i = 0; i < 15; ++i)
    a.as<float>()[i] = 0.5f * i;
  ASSERT_FALSE(static_cast<bool>(writeNpy(path, a)));
  // Only the file itself: the temporary it was written to is gone.
  std::error_code ec;
  int files = 0;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    ++files;
  EXPECT_EQ(files, 1);
  auto b = readNpy(path);
  ASSERT_TRUE(static_cast<bool>(b));
  EXPECT_EQ(b->shape, a.shape);
  EXPECT_TRUE(b->data == a.data);
  // The data read (taken over from the file's buffer) can be written.
  b->as<float>()[14] = -1.0f;
  EXPECT_EQ(b->as<float>()[14], -1.0f);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data.data()) % 64, 0u);
  llvm::sys::fs::remove_directories(dir);
}
} // namespace
