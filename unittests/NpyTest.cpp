//===- NpyTest.cpp - .npy reading and writing -----------------------------===//

#include "gptq/Support/Npy.h"

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

TEST(NpyTest, ByteCountsAreCheckedForOverflow) {
  EXPECT_EQ(checkedByteCount({2, 3}, 4), 24);
  EXPECT_EQ(checkedByteCount({}, 8), 8);
  EXPECT_EQ(checkedNumElements({5, 0, 7}), 0);
  EXPECT_EQ(checkedNumElements({INT64_MAX}), INT64_MAX);
  EXPECT_EQ(checkedByteCount({INT64_MAX / 4}, 4), INT64_MAX / 4 * 4);
  // (2^62 + 8) x 16 float32 is 2^68 + 512 bytes: wrapped, it would be 512.
  EXPECT_EQ(checkedByteCount({(int64_t(1) << 62) + 8, 16}, 4), std::nullopt);
  EXPECT_EQ(checkedNumElements({99999999999, 99999999999}), std::nullopt);
  EXPECT_EQ(checkedByteCount({INT64_MAX}, 2), std::nullopt);
  // 2^63 is one more than fits.
  EXPECT_EQ(checkedByteCount({int64_t(1) << 32, int64_t(1) << 31}, 1),
            std::nullopt);
  EXPECT_EQ(checkedNumElements({3, -1}), std::nullopt);
  // An empty array's other dimensions must still fit (its strides do).
  EXPECT_EQ(checkedByteCount({0, int64_t(1) << 61}, 2), 0);
  EXPECT_EQ(checkedByteCount({0, int64_t(1) << 62}, 2), std::nullopt);
  EXPECT_EQ(checkedByteCount({1}, uint64_t(1) << 63), std::nullopt);
}

/// The bytes of a version 1.0 .npy file whose header says `descr` and
/// `shape`, followed by `dataBytes` zero bytes.
std::string craftedNpy(llvm::StringRef descr, llvm::StringRef shape,
                       size_t dataBytes) {
  std::string header = ("{'descr': '" + descr +
                        "', 'fortran_order': False, 'shape': " + shape + ", }")
                           .str();
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + std::string(dataBytes, '\0');
}

TEST(NpyTest, RejectsShapesWhoseSizeOverflows) {
  // The product wraps to exactly the 512 bytes present.
  std::string wrapped = craftedNpy("<f4", "(4611686018427387912, 16)", 512);
  EXPECT_NE(errorOf(parseNpy(wrapped, "x.npy"))
                .find("x.npy: the shape (4611686018427387912, 16) is too large "
                      "for float32 data"),
            std::string::npos);
  std::string huge = craftedNpy("<f8", "(99999999999, 99999999999)", 8);
  EXPECT_NE(errorOf(parseNpy(huge, "x.npy")).find("too large"),
            std::string::npos);
  // Not a number that fits in int64_t at all.
  std::string tooLong = craftedNpy("<f4", "(99999999999999999999999, 1)", 4);
  EXPECT_NE(errorOf(parseNpy(tooLong, "x.npy")).find("malformed shape"),
            std::string::npos);
  // The largest size that fits is still compared with the data present.
  std::string max = craftedNpy("|u1", "(9223372036854775807,)", 16);
  EXPECT_NE(errorOf(parseNpy(max, "x.npy"))
                .find("expected 9223372036854775807 bytes of data"),
            std::string::npos);
  std::string fine = craftedNpy("<i2", "(3, 0, 5)", 0);
  auto empty = parseNpy(fine, "x.npy");
  ASSERT_TRUE(static_cast<bool>(empty));
  EXPECT_EQ(empty->numElements(), 0);
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
