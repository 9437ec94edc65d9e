//===- NpzTest.cpp - .npz reading and writing -----------------------------===//
//
// The fixtures are in unittests/Inputs/npz: savez.npz and
// savez_compressed.npz were written by NumPy (make_fixtures.py there);
// written.npz and written_zip64.npz are what the writer makes of
// fixtureArrays() (python/tests/test_npz.py checks that numpy.load reads
// them). When the writer changes on purpose, the test that compares with
// them names the files it wrote instead, to be copied over them.
//
//===----------------------------------------------------------------------===//

#include "gptq/Support/Npz.h"
#include "gptq/Support/Output.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cstring>
#include <gtest/gtest.h>

using namespace mlir::gptq;
namespace fs = llvm::sys::fs;

namespace {
std::string inputPath(llvm::StringRef name) {
  return (llvm::Twine(GPTQ_SOURCE_DIR) + "/unittests/Inputs/npz/" + name).str();
}

std::string fileBytes(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  EXPECT_TRUE(static_cast<bool>(buffer)) << path.str();
  return buffer ? (*buffer)->getBuffer().str() : "";
}

struct TempDir {
  TempDir() { EXPECT_FALSE(fs::createUniqueDirectory("gptq-npz-test", path)); }
  ~TempDir() { fs::remove_directories(path); }
  std::string file(llvm::StringRef name) const {
    return (path + "/" + name).str();
  }
  llvm::SmallString<128> path;
};

template <typename T>
NpyArray makeArray(DType dtype, std::vector<int64_t> shape,
                   std::vector<T> values) {
  NpyArray a = NpyArray::zeros(dtype, std::move(shape));
  EXPECT_EQ(a.data.size(), values.size() * sizeof(T));
  std::memcpy(a.data.data(), values.data(), a.data.size());
  return a;
}

/// The arrays of NumPy's fixtures (make_fixtures.py).
std::vector<NpzEntry> numpyArrays() {
  std::vector<NpzEntry> e;
  e.push_back({"layers.0.attention.wq",
               makeArray<float>(DType::F32, {2, 3},
                                {0, 0.25f, 0.5f, 0.75f, 1, 1.25f})});
  e.push_back({"counts", makeArray<int64_t>(DType::I64, {4},
                                            {1, -2, 3, int64_t(1) << 40})});
  e.push_back({"scalar", makeArray<double>(DType::F64, {}, {2.5})});
  return e;
}

/// The arrays of written.npz: NumPy's, an empty one, and one with a name
/// outside ASCII.
std::vector<NpzEntry> fixtureArrays() {
  std::vector<NpzEntry> e = numpyArrays();
  e.push_back({"empty", NpyArray::zeros(DType::F32, {0, 3})});
  e.push_back({"caf\xc3\xa9", makeArray<uint8_t>(DType::U8, {2}, {7, 255})});
  return e;
}

void expectSame(const std::vector<NpzEntry> &actual,
                const std::vector<NpzEntry> &expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_EQ(actual[i].name, expected[i].name);
    EXPECT_EQ(actual[i].array.dtype, expected[i].array.dtype) << actual[i].name;
    EXPECT_EQ(actual[i].array.shape, expected[i].array.shape) << actual[i].name;
    EXPECT_TRUE(actual[i].array.data == expected[i].array.data)
        << actual[i].name;
  }
}

std::string errorOf(llvm::Expected<std::vector<NpzEntry>> r) {
  if (r)
    return "";
  return llvm::toString(r.takeError());
}

std::string serialized(llvm::ArrayRef<NpzEntry> entries) {
  std::vector<NpzEntryRef> refs;
  for (const NpzEntry &e : entries)
    refs.push_back({e.name, &e.array});
  llvm::Expected<std::string> bytes = serializeNpz(refs);
  EXPECT_TRUE(static_cast<bool>(bytes));
  if (!bytes) {
    llvm::consumeError(bytes.takeError());
    return "";
  }
  return *bytes;
}

// Field access to archives, to corrupt them on purpose.
uint32_t get32(const std::string &b, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = v << 8 | uint8_t(b[at + i]);
  return v;
}
uint16_t get16(const std::string &b, size_t at) {
  return uint16_t(uint8_t(b[at]) | uint8_t(b[at + 1]) << 8);
}
void set16(std::string &b, size_t at, uint16_t v) {
  b[at] = char(v);
  b[at + 1] = char(v >> 8);
}
void set32(std::string &b, size_t at, uint32_t v) {
  set16(b, at, uint16_t(v));
  set16(b, at + 2, uint16_t(v >> 16));
}

/// Offsets in an archive without ZIP64 records or a comment.
struct Layout {
  explicit Layout(const std::string &b) : b(b) {
    size_t at = get32(b, b.size() - 6);
    for (uint16_t i = 0, n = get16(b, b.size() - 12); i < n; ++i) {
      central.push_back(at);
      at += 46 + get16(b, at + 28) + get16(b, at + 30) + get16(b, at + 32);
    }
  }
  size_t local(size_t i) const { return get32(b, central[i] + 42); }
  size_t data(size_t i) const {
    return local(i) + 30 + get16(b, local(i) + 26) + get16(b, local(i) + 28);
  }
  size_t directoryOffsetField() const { return b.size() - 6; }
  const std::string &b;
  std::vector<size_t> central;
};

/// Replaces member `i`'s name (of the same length) in both its headers.
void rename(std::string &b, size_t i, llvm::StringRef name) {
  Layout l(b);
  ASSERT_EQ(get16(b, l.central[i] + 28), name.size());
  b.replace(l.central[i] + 46, name.size(), name.str());
  b.replace(l.local(i) + 30, name.size(), name.str());
}

/// Replaces bytes of member `i`'s (stored) data and fixes its CRC-32s.
void patchData(std::string &b, size_t i, size_t offset, llvm::StringRef to) {
  Layout l(b);
  b.replace(l.data(i) + offset, to.size(), to.str());
  uint32_t size = get32(b, l.central[i] + 24);
  uint32_t crc = llvm::crc32(
      llvm::arrayRefFromStringRef(llvm::StringRef(b).substr(l.data(i), size)));
  set32(b, l.central[i] + 16, crc);
  set32(b, l.local(i) + 14, crc);
}

std::string parseError(const std::string &bytes) {
  return errorOf(parseNpz(bytes, "in.npz"));
}

TEST(NpzTest, ReadsWhatNumPySavezWrites) {
  auto entries = readNpz(inputPath("savez.npz"));
  ASSERT_TRUE(static_cast<bool>(entries)) << errorOf(std::move(entries));
  expectSame(*entries, numpyArrays());
}

TEST(NpzTest, ReadsWhatNumPySavezCompressedWrites) {
  auto entries = readNpz(inputPath("savez_compressed.npz"));
  ASSERT_TRUE(static_cast<bool>(entries)) << errorOf(std::move(entries));
  expectSame(*entries, numpyArrays());
}

TEST(NpzTest, ReadsStoredMembersInPlace) {
  std::string bytes = fileBytes(inputPath("savez.npz"));
  auto views = parseNpzInPlace(bytes, "savez.npz");
  ASSERT_TRUE(static_cast<bool>(views)) << llvm::toString(views.takeError());
  std::vector<NpzEntry> expected = numpyArrays();
  ASSERT_EQ(views->size(), expected.size());
  for (size_t i = 0; i < views->size(); ++i) {
    const NpzView &view = (*views)[i];
    EXPECT_EQ(view.name, expected[i].name);
    EXPECT_EQ(view.array.dtype, expected[i].array.dtype) << view.name;
    EXPECT_EQ(view.array.shape, expected[i].array.shape) << view.name;
    EXPECT_EQ(view.array.describe(), expected[i].array.describe());
    // The data is the archive's own bytes, not a copy.
    EXPECT_GE(view.array.data.data(), bytes.data()) << view.name;
    EXPECT_LE(view.array.data.data() + view.array.data.size(),
              bytes.data() + bytes.size())
        << view.name;
    EXPECT_EQ(view.array.data, llvm::StringRef(expected[i].array.data.data(),
                                               expected[i].array.data.size()))
        << view.name;
  }
}

TEST(NpzTest, InPlaceReadingRefusesCompressedMembersAndKeepsTheChecks) {
  std::string compressed = fileBytes(inputPath("savez_compressed.npz"));
  auto views = parseNpzInPlace(compressed, "c.npz");
  ASSERT_FALSE(static_cast<bool>(views));
  EXPECT_EQ(llvm::toString(views.takeError()),
            "c.npz: member 'layers.0.attention.wq.npy': is compressed; arrays "
            "read in place must be stored uncompressed (as numpy.savez writes "
            "them, not numpy.savez_compressed)");
  std::string bytes = serialized(numpyArrays());
  Layout l(bytes);
  bytes[l.local(1) - 1] ^= 1;
  views = parseNpzInPlace(bytes, "in.npz");
  ASSERT_FALSE(static_cast<bool>(views));
  std::string error = llvm::toString(views.takeError());
  EXPECT_EQ(error.find("in.npz: member 'layers.0.attention.wq.npy': bad "
                       "CRC-32"),
            0u)
      << error;
}

TEST(NpzTest, WritesThroughPendingOutputsAndReadsBack) {
  TempDir dir;
  std::string path = dir.file("h.npz");
  std::vector<NpzEntry> arrays = fixtureArrays();
  {
    PendingOutputs outputs;
    ASSERT_FALSE(static_cast<bool>(writeNpz(outputs, path, arrays)));
    EXPECT_FALSE(fs::exists(path)) << "written before the commit";
    ASSERT_FALSE(static_cast<bool>(outputs.commit()));
  }
  auto read = readNpz(path);
  ASSERT_TRUE(static_cast<bool>(read)) << errorOf(std::move(read));
  expectSame(*read, arrays);

  // By reference, in another order: the archive keeps the order given.
  std::vector<NpzEntryRef> refs = {{"b", &arrays[1].array},
                                   {"a", &arrays[0].array}};
  {
    PendingOutputs outputs;
    ASSERT_FALSE(static_cast<bool>(writeNpz(outputs, path, refs)));
    ASSERT_FALSE(static_cast<bool>(outputs.commit()));
  }
  read = readNpz(path);
  ASSERT_TRUE(static_cast<bool>(read)) << errorOf(std::move(read));
  ASSERT_EQ(read->size(), 2u);
  EXPECT_EQ((*read)[0].name, "b");
  EXPECT_TRUE((*read)[0].array.data == arrays[1].array.data);
  EXPECT_EQ((*read)[1].name, "a");
}

TEST(NpzTest, AnEmptyArchiveRoundTrips) {
  std::string bytes = serialized({});
  // What numpy.savez writes for no arrays: the end record alone.
  EXPECT_EQ(bytes, std::string("PK\x05\x06", 4) + std::string(18, '\0'));
  auto read = parseNpz(bytes, "empty.npz");
  ASSERT_TRUE(static_cast<bool>(read)) << errorOf(std::move(read));
  EXPECT_TRUE(read->empty());
}

/// Compares `bytes` with the fixture `name`; on a difference, writes them
/// beside it for a look (and a copy, when the change is meant).
void expectFixture(const std::string &bytes, llvm::StringRef name) {
  std::string expected = fileBytes(inputPath(name));
  if (bytes == expected)
    return;
  llvm::SmallString<128> actual;
  fs::createTemporaryFile("npz-actual", "npz", actual);
  ASSERT_FALSE(static_cast<bool>(writeFileAtomically(actual, bytes)));
  ADD_FAILURE() << "the writer's bytes differ from " << name.str()
                << "; they are in " << actual.str().str();
}

TEST(NpzTest, WritesTheBytesNumPyIsCheckedToRead) {
  std::vector<NpzEntry> arrays = fixtureArrays();
  expectFixture(serialized(arrays), "written.npz");
  auto read = parseNpz(fileBytes(inputPath("written.npz")), "written.npz");
  ASSERT_TRUE(static_cast<bool>(read)) << errorOf(std::move(read));
  expectSame(*read, arrays);
}

TEST(NpzTest, Zip64RecordsRoundTrip) {
  // A limit of 0 gives every member, offset and the directory ZIP64
  // records, as members of 4 GiB would have.
  std::vector<NpzEntry> arrays = fixtureArrays();
  std::vector<NpzEntryRef> refs;
  for (const NpzEntry &e : arrays)
    refs.push_back({e.name, &e.array});
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  ASSERT_FALSE(static_cast<bool>(detail::writeNpz(os, refs, 0)));
  EXPECT_NE(bytes.find("PK\x06\x06"), std::string::npos);
  EXPECT_NE(bytes.find("PK\x06\x07"), std::string::npos);
  expectFixture(bytes, "written_zip64.npz");
  auto read = parseNpz(bytes, "zip64.npz");
  ASSERT_TRUE(static_cast<bool>(read)) << errorOf(std::move(read));
  expectSame(*read, arrays);
}

TEST(NpzTest, MoreThan65534MembersUseZip64Counts) {
  std::vector<NpzEntry> arrays;
  for (int i = 0; i < 70000; ++i)
    arrays.push_back(
        {std::to_string(i), makeArray<int32_t>(DType::I32, {1}, {i})});
  std::string bytes = serialized(arrays);
  EXPECT_NE(bytes.find("PK\x06\x06"), std::string::npos);
  auto read = parseNpz(bytes, "many.npz");
  ASSERT_TRUE(static_cast<bool>(read)) << errorOf(std::move(read));
  ASSERT_EQ(read->size(), arrays.size());
  EXPECT_EQ(read->back().name, "69999");
  EXPECT_EQ(*read->back().array.as<int32_t>(), 69999);
}

TEST(NpzTest, TheWriterRefusesBadNamesAndWritesNothing) {
  TempDir dir;
  std::string path = dir.file("bad.npz");
  NpyArray a = NpyArray::zeros(DType::F32, {2});
  NpyArray truncated = NpyArray::zeros(DType::F32, {2});
  truncated.data.assign(4, 0);
  struct Case {
    std::vector<NpzEntryRef> entries;
    const char *error;
  } cases[] = {
      {{{"a", &a}, {"a", &a}}, "two arrays are named 'a'"},
      {{{"", &a}}, "an array has an empty name"},
      {{{llvm::StringRef("a\0b", 3), &a}}, "holds a NUL byte"},
      {{{"t", &truncated}}, "the array 't' (float32 [2]) holds 4 bytes"},
  };
  for (const Case &c : cases) {
    PendingOutputs outputs;
    llvm::Error err = writeNpz(outputs, path, c.entries);
    ASSERT_TRUE(static_cast<bool>(err)) << c.error;
    std::string message = llvm::toString(std::move(err));
    EXPECT_NE(message.find("cannot write '" + path + "': "), std::string::npos)
        << message;
    EXPECT_NE(message.find(c.error), std::string::npos) << message;
    ASSERT_FALSE(static_cast<bool>(outputs.commit()));
    std::error_code ec;
    EXPECT_EQ(fs::directory_iterator(dir.path, ec), fs::directory_iterator())
        << "a file was left behind";
  }
  std::string longName(65532, 'x');
  llvm::Expected<std::string> bytes = serializeNpz({{longName, &a}});
  ASSERT_FALSE(static_cast<bool>(bytes));
  EXPECT_NE(llvm::toString(bytes.takeError()).find("longer than 65,531"),
            std::string::npos);
}

TEST(NpzTest, NotAZipArchive) {
  NpyArray a = NpyArray::zeros(DType::F32, {2});
  EXPECT_EQ(parseError(serializeNpy(a)),
            "in.npz: not an .npz archive but a .npy file");
  EXPECT_EQ(parseError("hello, world, this is text and not a zip file"),
            "in.npz: not a zip archive (no end-of-central-directory record); "
            "an .npz file is a zip archive of .npy files");
  EXPECT_NE(parseError("").find("not a zip archive"), std::string::npos);
  TempDir dir;
  EXPECT_EQ(errorOf(readNpz(dir.file("missing.npz"))),
            dir.file("missing.npz") +
                ": cannot read: No such file or directory");
  EXPECT_EQ(errorOf(readNpz("/dev/zero")),
            "/dev/zero: cannot read: not a regular file");
}

TEST(NpzTest, TruncatedArchives) {
  std::string bytes = serialized(fixtureArrays());
  EXPECT_EQ(parseError(bytes.substr(0, bytes.size() / 2)),
            "in.npz: truncated zip archive: no end-of-central-directory "
            "record in its " +
                std::to_string(bytes.size() / 2) + " bytes");
  // Every prefix, of ours and of NumPy's archives, is an error.
  for (const char *fixture :
       {"written.npz", "savez.npz", "savez_compressed.npz"}) {
    std::string whole = fileBytes(inputPath(fixture));
    for (size_t n = 0; n < whole.size(); ++n)
      EXPECT_NE(parseError(whole.substr(0, n)), "") << fixture << " " << n;
  }
}

TEST(NpzTest, BadCrc) {
  std::string bytes = serialized(numpyArrays());
  Layout l(bytes);
  // The last byte of the first array's data.
  bytes[l.local(1) - 1] ^= 1;
  std::string error = parseError(bytes);
  EXPECT_EQ(error.find("in.npz: member 'layers.0.attention.wq.npy': bad "
                       "CRC-32: the archive records 0x"),
            0u)
      << error;
}

TEST(NpzTest, UnsupportedMethodsAndEncryption) {
  std::string bytes = serialized(numpyArrays());
  Layout l(bytes);
  std::string bzip2 = bytes;
  set16(bzip2, l.central[1] + 10, 12);
  set16(bzip2, l.local(1) + 8, 12);
  EXPECT_EQ(parseError(bzip2),
            "in.npz: member 'counts.npy': unsupported compression method 12 "
            "(supported: 0, stored, as numpy.savez writes; 8, deflate, as "
            "numpy.savez_compressed writes)");
  std::string encrypted = bytes;
  set16(encrypted, l.central[0] + 8, 1);
  EXPECT_EQ(parseError(encrypted), "in.npz: member "
                                   "'layers.0.attention.wq.npy': encrypted "
                                   "members are not supported");
}

TEST(NpzTest, DuplicateAndNonNpyMembers) {
  std::vector<NpzEntry> arrays;
  arrays.push_back({"a", NpyArray::zeros(DType::F32, {1})});
  arrays.push_back({"b", NpyArray::zeros(DType::F32, {1})});
  std::string bytes = serialized(arrays);
  std::string twice = bytes;
  rename(twice, 1, "a.npy");
  EXPECT_EQ(parseError(twice),
            "in.npz: member 'a.npy': appears twice in the archive");
  std::string text = bytes;
  rename(text, 1, "b.txt");
  EXPECT_EQ(parseError(text),
            "in.npz: member 'b.txt': not a .npy member (an .npz archive of "
            "arrays holds only NAME.npy members)");
  // A name that would break the message's line is escaped.
  std::string newline = bytes;
  rename(newline, 1, "b\n.np");
  EXPECT_EQ(parseError(newline),
            "in.npz: member 'b\\n.np': not a .npy member (an .npz archive "
            "of arrays holds only NAME.npy members)");
}

TEST(NpzTest, AMalformedNpyMember) {
  std::vector<NpzEntry> arrays = numpyArrays();
  std::string bytes = serialized(arrays);
  std::string member = serializeNpy(arrays[1].array);
  size_t at = member.find("'descr'");
  ASSERT_NE(at, std::string::npos);
  patchData(bytes, 1, at, "'DESCR'");
  std::string error = parseError(bytes);
  EXPECT_EQ(error.find("in.npz: member 'counts.npy': malformed .npy header "),
            0u)
      << error;
  // Header text with a line break, quoted (escaped) by the .npy reader's
  // message, keeps the message on one line (found by gptq-fuzz-npz).
  bytes = serialized(arrays);
  patchData(bytes, 1, at, "'d\nscr'");
  error = parseError(bytes);
  EXPECT_EQ(error.find("in.npz: member 'counts.npy': malformed .npy header "
                       "'{'d\\nscr': '<i8', "),
            0u)
      << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  // Data as long as the zip says, shorter than the .npy header says: the
  // .npy parser's own check, now behind a valid CRC-32.
  bytes = serialized(arrays);
  at = member.find("(4,)");
  ASSERT_NE(at, std::string::npos);
  patchData(bytes, 1, at, "(5,)");
  EXPECT_EQ(parseError(bytes),
            "in.npz: member 'counts.npy': expected 40 bytes of data for "
            "int64 [5], found 32 (truncated or corrupt file)");
}

TEST(NpzTest, DeclaredSizesBeyondTheFile) {
  std::string bytes = serialized(numpyArrays());
  Layout l(bytes);
  std::string big = bytes;
  set32(big, l.central[2] + 20, 0x7fffffff);
  set32(big, l.central[2] + 24, 0x7fffffff);
  std::string error = parseError(big);
  EXPECT_EQ(error.find("in.npz: member 'scalar.npy': its 2147483647 bytes at "
                       "offset "),
            0u)
      << error;
  EXPECT_NE(error.find("extend past the central directory"), std::string::npos);

  std::string directory = bytes;
  set32(directory, l.directoryOffsetField(), 0xfffffff0);
  error = parseError(directory);
  EXPECT_EQ(error.find("in.npz: the central directory ("), 0u) << error;

  std::string count = bytes;
  set16(count, bytes.size() - 12, 1000);
  set16(count, bytes.size() - 14, 1000);
  EXPECT_NE(parseError(count).find("declares 1000 members, more than its "
                                   "central directory of"),
            std::string::npos);

  std::string name = bytes;
  set16(name, l.central[2] + 28, 0xffff);
  EXPECT_NE(parseError(name).find("extends past the directory"),
            std::string::npos);

  std::string local = bytes;
  set32(local, l.central[2] + 42, 0x7fffffff);
  EXPECT_NE(parseError(local).find("no local header at offset 2147483647"),
            std::string::npos);

  std::string overlap = bytes;
  set32(overlap, l.central[1] + 42, uint32_t(l.local(0)));
  EXPECT_NE(parseError(overlap).find("overlaps the member before it"),
            std::string::npos);

  std::string missingZip64 = bytes;
  set32(missingZip64, l.central[0] + 24, 0xffffffff);
  EXPECT_NE(parseError(missingZip64)
                .find("defer to a ZIP64 extra field that is missing"),
            std::string::npos);
}

TEST(NpzTest, CorruptDeflatedMembers) {
  std::string bytes = fileBytes(inputPath("savez_compressed.npz"));
  Layout l(bytes);
  uint32_t size = get32(bytes, l.central[0] + 24);
  uint32_t compressed = get32(bytes, l.central[0] + 20);

  std::string longer = bytes;
  set32(longer, l.central[0] + 24, size + 1);
  EXPECT_EQ(parseError(longer),
            "in.npz: member 'layers.0.attention.wq.npy': inflates to " +
                std::to_string(size) + " bytes, not its declared " +
                std::to_string(size + 1) + " (corrupt archive)");

  std::string shorter = bytes;
  set32(shorter, l.central[0] + 24, size - 1);
  EXPECT_EQ(parseError(shorter),
            "in.npz: member 'layers.0.attention.wq.npy': inflates to more "
            "than its declared " +
                std::to_string(size - 1) + " bytes (corrupt archive)");

  std::string bomb = bytes;
  set32(bomb, l.central[0] + 24, 0xfffffff0);
  EXPECT_EQ(parseError(bomb).find(
                "in.npz: member 'layers.0.attention.wq.npy': declares "
                "4294967280 bytes, more than deflate can expand its"),
            0u);

  std::string cut = bytes;
  set32(cut, l.central[0] + 20, compressed / 2);
  EXPECT_EQ(parseError(cut),
            "in.npz: member 'layers.0.attention.wq.npy': truncated deflate "
            "stream");

  std::string corrupt = bytes;
  // A block type of 3 is reserved: an error for any inflater.
  corrupt[l.data(0)] = char(uint8_t(corrupt[l.data(0)]) | 0x06);
  EXPECT_EQ(parseError(corrupt),
            "in.npz: member 'layers.0.attention.wq.npy': corrupt deflate "
            "stream (invalid block type)");
}

TEST(NpzTest, FlippedBytesNeverCrash) {
  for (const char *fixture :
       {"written.npz", "written_zip64.npz", "savez_compressed.npz"}) {
    std::string whole = fileBytes(inputPath(fixture));
    for (size_t i = 0; i < whole.size(); ++i) {
      for (uint8_t mask : {0x01, 0x80, 0xff}) {
        std::string bytes = whole;
        bytes[i] ^= char(mask);
        auto read = parseNpz(bytes, "in.npz");
        if (!read) {
          std::string message = llvm::toString(read.takeError());
          EXPECT_EQ(message.find("in.npz: "), 0u) << message;
          EXPECT_EQ(message.find_first_of("\n\r"), std::string::npos)
              << message;
        }
      }
    }
  }
}

} // namespace
