//===- Npz.cpp - .npz archives of arrays ----------------------------------===//
//
// The zip layout (PKWARE's APPNOTE): each member is a local header, its
// name, an extra field and the member's bytes; then comes the central
// directory, one record per member with its sizes, CRC-32 and the offset of
// its local header; then the end record, with the directory's offset, size
// and member count. ZIP64 widens those to 64 bits: a 32-bit field holding
// all ones defers to a ZIP64 extra field (members) or to a ZIP64 end record
// found through a locator just before the end record (the directory).
//
//===----------------------------------------------------------------------===//

#include "gptq/Support/Npz.h"
#include "gptq/Support/Output.h"
#include "gptq/Support/Signals.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <climits>
#include <cstdlib>

#if GPTQ_HAVE_ZLIB
#include <zlib.h>
#endif

using namespace mlir::gptq;
using llvm::StringRef;
using llvm::Twine;

namespace {
constexpr uint32_t kLocalSignature = 0x04034b50;
constexpr uint32_t kCentralSignature = 0x02014b50;
constexpr uint32_t kEndSignature = 0x06054b50;
constexpr uint32_t kZip64EndSignature = 0x06064b50;
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr uint64_t kLocalSize = 30;
constexpr uint64_t kCentralSize = 46;
constexpr uint64_t kEndSize = 22;
constexpr uint64_t kZip64EndSize = 56;
constexpr uint64_t kZip64LocatorSize = 20;
constexpr uint64_t kMaxCommentSize = 0xffff;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint16_t kMethodStored = 0;
constexpr uint16_t kMethodDeflate = 8;
constexpr uint16_t kFlagEncrypted = 0x0001;
constexpr uint16_t kFlagStrongEncryption = 0x0040;
constexpr uint16_t kFlagMaskedHeader = 0x2000;
constexpr uint16_t kFlagUtf8 = 0x0800;
/// Deflate expands at most 1032-fold (a 258-byte match in two bits).
constexpr uint64_t kMaxDeflateRatio = 1032;
constexpr StringRef kSuffix = ".npy";

uint16_t read16(StringRef b, uint64_t at) {
  auto u = [&](uint64_t i) {
    return static_cast<uint16_t>(uint8_t(b[at + i]));
  };
  return u(0) | u(1) << 8;
}
uint32_t read32(StringRef b, uint64_t at) {
  return uint32_t(read16(b, at)) | uint32_t(read16(b, at + 2)) << 16;
}
uint64_t read64(StringRef b, uint64_t at) {
  return uint64_t(read32(b, at)) | uint64_t(read32(b, at + 4)) << 32;
}

/// `name` quoted, with control and non-ASCII bytes escaped, so that a
/// message stays one line whatever the archive holds.
std::string quoted(StringRef name) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "'";
  os.write_escaped(name, /*UseHexEscapes=*/true);
  os << "'";
  return s;
}

/// `err` with control characters escaped: the .npy reader quotes header
/// text, which a corrupt member may fill with line breaks.
llvm::Error oneLine(llvm::Error err) {
  std::string message = llvm::toString(std::move(err)), out;
  for (char c : message) {
    if (uint8_t(c) < 0x20 || uint8_t(c) == 0x7f)
      out += "\\x" + llvm::utohexstr(uint8_t(c), /*LowerCase=*/false,
                                     /*Width=*/2);
    else
      out += c;
  }
  return llvm::createStringError(llvm::inconvertibleErrorCode(), out);
}

/// The bytes of an inflated member: grown with realloc, which moves large
/// blocks by remapping their pages rather than copying them and leaves new
/// pages untouched until they are written.
class InflatedBytes {
public:
  InflatedBytes() = default;
  InflatedBytes(const InflatedBytes &) = delete;
  InflatedBytes &operator=(const InflatedBytes &) = delete;
  ~InflatedBytes() { std::free(ptr); }
  bool reserve(uint64_t size) {
    void *p = std::realloc(ptr, std::max<uint64_t>(size, 1));
    if (!p)
      return false;
    ptr = static_cast<char *>(p);
    room = size;
    return true;
  }
  char *data() { return ptr; }
  uint64_t capacity() const { return room; }

private:
  char *ptr = nullptr;
  uint64_t room = 0;
};

/// Reads one archive held in memory.
class Reader {
public:
  Reader(StringRef bytes, StringRef file) : bytes(bytes), file(file) {}

  llvm::Expected<std::vector<NpzEntry>> read();
  llvm::Expected<std::vector<NpzView>> readInPlace();

private:
  template <typename Entry, typename Parse>
  llvm::Expected<std::vector<Entry>> collect(bool inPlace, Parse parse);

  struct Directory {
    uint64_t offset = 0, size = 0, count = 0;
    /// Where the records after the directory start.
    uint64_t end = 0;
  };
  struct Member {
    std::string name;
    uint16_t flags = 0, method = 0;
    uint32_t crc = 0;
    uint64_t compressedSize = 0, size = 0, localOffset = 0;
  };

  llvm::Error fail(const Twine &message) const {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   file + ": " + message);
  }
  llvm::Error failMember(StringRef member, const Twine &message) const {
    return fail("member " + quoted(member) + ": " + message);
  }
  /// Whether [at, at + size) lies inside [0, limit).
  static bool within(uint64_t at, uint64_t size, uint64_t limit) {
    return at <= limit && size <= limit - at;
  }

  llvm::Expected<Directory> findDirectory() const;
  llvm::Error readZip64End(uint64_t endAt, Directory &dir) const;
  llvm::Expected<Member> readCentral(uint64_t &at, uint64_t end) const;
  llvm::Error readZip64Extra(StringRef extra, Member &member) const;
  llvm::Expected<StringRef> memberBytes(const Member &member,
                                        uint64_t directoryOffset,
                                        uint64_t &nextFree) const;
  llvm::Error inflate(const Member &member, StringRef compressed,
                      InflatedBytes &out) const;
  /// Checks each member and calls `onMember` with its name (without the .npy
  /// suffix), its .npy bytes and what to call it in messages, in archive
  /// order; with `inPlace`, deflated members are refused.
  llvm::Error
  visit(bool inPlace,
        llvm::function_ref<llvm::Error(StringRef, StringRef, StringRef)>
            onMember);

  StringRef bytes;
  StringRef file;
};

llvm::Expected<Reader::Directory> Reader::findDirectory() const {
  uint64_t size = bytes.size();
  // The end record sits at the end, followed by a comment of up to 64 KiB;
  // the last one whose comment fits is it.
  std::optional<uint64_t> endAt;
  if (size >= kEndSize) {
    uint64_t lowest = size - kEndSize > kMaxCommentSize
                          ? size - kEndSize - kMaxCommentSize
                          : 0;
    for (uint64_t at = size - kEndSize + 1; at-- > lowest;) {
      if (read32(bytes, at) == kEndSignature &&
          read16(bytes, at + 20) <= size - kEndSize - at) {
        endAt = at;
        break;
      }
    }
  }
  if (!endAt) {
    if (bytes.starts_with("PK\x03\x04") || bytes.starts_with("PK\x05\x06"))
      return fail("truncated zip archive: no end-of-central-directory record "
                  "in its " +
                  Twine(size) + " bytes");
    if (bytes.starts_with("\x93NUMPY"))
      return fail("not an .npz archive but a .npy file");
    return fail("not a zip archive (no end-of-central-directory record); an "
                ".npz file is a zip archive of .npy files");
  }
  Directory dir;
  uint16_t disk = read16(bytes, *endAt + 4);
  uint16_t directoryDisk = read16(bytes, *endAt + 6);
  uint16_t countOnDisk = read16(bytes, *endAt + 8);
  dir.count = read16(bytes, *endAt + 10);
  dir.size = read32(bytes, *endAt + 12);
  dir.offset = read32(bytes, *endAt + 16);
  dir.end = *endAt;
  if (disk != 0 || directoryDisk != 0 || countOnDisk != dir.count)
    return fail("zip archives split over several disks are not supported");
  if (*endAt >= kZip64LocatorSize &&
      read32(bytes, *endAt - kZip64LocatorSize) == kZip64LocatorSignature) {
    if (llvm::Error err = readZip64End(*endAt, dir))
      return err;
  } else if (dir.count == 0xffff || dir.size == 0xffffffff ||
             dir.offset == 0xffffffff) {
    return fail("the end-of-central-directory record defers to a ZIP64 "
                "record that is missing (truncated or corrupt archive)");
  }
  if (!within(dir.offset, dir.size, dir.end))
    return fail("the central directory (" + Twine(dir.size) +
                " bytes at offset " + Twine(dir.offset) +
                ") extends past its end record at offset " + Twine(dir.end) +
                " (truncated or corrupt archive)");
  // Checked before anything is allocated for the members.
  if (dir.count > dir.size / kCentralSize)
    return fail("the end record declares " + Twine(dir.count) +
                " members, more than its central directory of " +
                Twine(dir.size) + " bytes can hold (corrupt archive)");
  return dir;
}

llvm::Error Reader::readZip64End(uint64_t endAt, Directory &dir) const {
  uint64_t locatorAt = endAt - kZip64LocatorSize;
  uint32_t recordDisk = read32(bytes, locatorAt + 4);
  uint64_t recordAt = read64(bytes, locatorAt + 8);
  uint32_t disks = read32(bytes, locatorAt + 16);
  if (recordDisk != 0 || disks > 1)
    return fail("zip archives split over several disks are not supported");
  if (!within(recordAt, kZip64EndSize, locatorAt) ||
      read32(bytes, recordAt) != kZip64EndSignature)
    return fail("no ZIP64 end-of-central-directory record at offset " +
                Twine(recordAt) +
                ", where its locator points (truncated or "
                "corrupt archive)");
  uint32_t disk = read32(bytes, recordAt + 16);
  uint32_t directoryDisk = read32(bytes, recordAt + 20);
  uint64_t countOnDisk = read64(bytes, recordAt + 24);
  dir.count = read64(bytes, recordAt + 32);
  dir.size = read64(bytes, recordAt + 40);
  dir.offset = read64(bytes, recordAt + 48);
  dir.end = recordAt;
  if (disk != 0 || directoryDisk != 0 || countOnDisk != dir.count)
    return fail("zip archives split over several disks are not supported");
  return llvm::Error::success();
}

llvm::Error Reader::readZip64Extra(StringRef extra, Member &member) const {
  bool needSize = member.size == 0xffffffff;
  bool needCompressed = member.compressedSize == 0xffffffff;
  bool needOffset = member.localOffset == 0xffffffff;
  while (!extra.empty()) {
    if (extra.size() < 4 || 4 + uint64_t(read16(extra, 2)) > extra.size())
      return failMember(member.name, "malformed extra field");
    uint16_t id = read16(extra, 0);
    StringRef data = extra.substr(4, read16(extra, 2));
    extra = extra.drop_front(4 + data.size());
    if (id != kZip64ExtraId)
      continue;
    // Only the fields whose 32-bit values are all ones are present, in
    // this order.
    uint64_t at = 0;
    std::pair<bool, uint64_t *> fields[] = {
        {needSize, &member.size},
        {needCompressed, &member.compressedSize},
        {needOffset, &member.localOffset}};
    for (auto [need, field] : fields) {
      if (!need)
        continue;
      if (data.size() - at < 8)
        return failMember(member.name, "truncated ZIP64 extra field");
      *field = read64(data, at);
      at += 8;
    }
    needSize = needCompressed = needOffset = false;
  }
  if (needSize || needCompressed || needOffset)
    return failMember(member.name, "its sizes defer to a ZIP64 extra field "
                                   "that is missing (corrupt archive)");
  return llvm::Error::success();
}

llvm::Expected<Reader::Member> Reader::readCentral(uint64_t &at,
                                                   uint64_t end) const {
  if (!within(at, kCentralSize, end) || read32(bytes, at) != kCentralSignature)
    return fail("bad central directory record at offset " + Twine(at) +
                " (corrupt archive)");
  Member member;
  member.flags = read16(bytes, at + 8);
  member.method = read16(bytes, at + 10);
  member.crc = read32(bytes, at + 16);
  member.compressedSize = read32(bytes, at + 20);
  member.size = read32(bytes, at + 24);
  uint64_t nameSize = read16(bytes, at + 28);
  uint64_t extraSize = read16(bytes, at + 30);
  uint64_t commentSize = read16(bytes, at + 32);
  uint16_t disk = read16(bytes, at + 34);
  member.localOffset = read32(bytes, at + 42);
  uint64_t recordSize = kCentralSize + nameSize + extraSize + commentSize;
  if (!within(at, recordSize, end))
    return fail("central directory record at offset " + Twine(at) +
                " extends past the directory (corrupt archive)");
  member.name = bytes.substr(at + kCentralSize, nameSize).str();
  StringRef extra = bytes.substr(at + kCentralSize + nameSize, extraSize);
  at += recordSize;
  if (disk != 0 && disk != 0xffff)
    return fail("zip archives split over several disks are not supported");
  if (llvm::Error err = readZip64Extra(extra, member))
    return err;
  return member;
}

llvm::Expected<StringRef> Reader::memberBytes(const Member &member,
                                              uint64_t directoryOffset,
                                              uint64_t &nextFree) const {
  uint64_t at = member.localOffset;
  if (at < nextFree)
    return failMember(member.name,
                      "its local header at offset " + Twine(at) +
                          " overlaps the member before it (corrupt archive)");
  if (!within(at, kLocalSize, directoryOffset) ||
      read32(bytes, at) != kLocalSignature)
    return failMember(member.name, "no local header at offset " + Twine(at) +
                                       " (truncated or corrupt archive)");
  uint64_t nameSize = read16(bytes, at + 26);
  uint64_t extraSize = read16(bytes, at + 28);
  uint64_t dataAt = at + kLocalSize + nameSize + extraSize;
  if (!within(at + kLocalSize, nameSize + extraSize, directoryOffset))
    return failMember(member.name, "its local header extends past the "
                                   "central directory (corrupt archive)");
  if (bytes.substr(at + kLocalSize, nameSize) != member.name)
    return failMember(member.name,
                      "its local header names it " +
                          quoted(bytes.substr(at + kLocalSize, nameSize)) +
                          " (corrupt archive)");
  if (!within(dataAt, member.compressedSize, directoryOffset))
    return failMember(
        member.name,
        "its " + Twine(member.compressedSize) + " bytes at offset " +
            Twine(dataAt) + " extend past the central directory at offset " +
            Twine(directoryOffset) + " (truncated or corrupt archive)");
  nextFree = dataAt + member.compressedSize;
  return bytes.substr(dataAt, member.compressedSize);
}

llvm::Error Reader::inflate(const Member &member, StringRef compressed,
                            InflatedBytes &out) const {
#if GPTQ_HAVE_ZLIB
  // Grown as the data comes, up to one byte past the declared size (which
  // would show that there is more): memory follows what the stream holds,
  // not what the archive claims.
  uint64_t limit = member.size == UINT64_MAX ? member.size : member.size + 1;
  auto grow = [&](uint64_t size) -> llvm::Error {
    if (out.reserve(size))
      return llvm::Error::success();
    return failMember(member.name, "out of memory for its " + Twine(size) +
                                       " inflated bytes");
  };
  if (llvm::Error err =
          grow(std::min<uint64_t>(limit, compressed.size() * 4 + 65536)))
    return err;
  z_stream stream = {};
  // Negative window bits: a raw deflate stream, as zip stores it.
  if (inflateInit2(&stream, -MAX_WBITS) != Z_OK)
    return failMember(member.name, "cannot start zlib's inflate");
  uint64_t consumed = 0, produced = 0;
  int status = Z_OK;
  constexpr uint64_t kChunk = 1u << 30;
  while (true) {
    if (produced == out.capacity()) {
      if (out.capacity() == limit)
        break;
      if (llvm::Error err =
              grow(std::min<uint64_t>(limit, out.capacity() * 2))) {
        inflateEnd(&stream);
        return err;
      }
    }
    uint64_t in = std::min<uint64_t>(compressed.size() - consumed, kChunk);
    uint64_t room = std::min<uint64_t>(out.capacity() - produced, kChunk);
    stream.next_in =
        reinterpret_cast<Bytef *>(const_cast<char *>(compressed.data())) +
        consumed;
    stream.avail_in = static_cast<uInt>(in);
    stream.next_out = reinterpret_cast<Bytef *>(out.data()) + produced;
    stream.avail_out = static_cast<uInt>(room);
    status = ::inflate(&stream, Z_NO_FLUSH);
    uint64_t took = in - stream.avail_in, gave = room - stream.avail_out;
    consumed += took;
    produced += gave;
    // Without progress the input has ended before the stream did.
    if (status != Z_OK || (took == 0 && gave == 0))
      break;
  }
  std::string why = stream.msg ? stream.msg : "";
  inflateEnd(&stream);
  if (produced > member.size)
    return failMember(member.name, "inflates to more than its declared " +
                                       Twine(member.size) +
                                       " bytes (corrupt archive)");
  if (status != Z_STREAM_END) {
    if (status == Z_OK || status == Z_BUF_ERROR)
      return failMember(member.name, "truncated deflate stream");
    return failMember(member.name, "corrupt deflate stream" +
                                       (why.empty() ? "" : " (" + why + ")"));
  }
  if (produced != member.size)
    return failMember(member.name, "inflates to " + Twine(produced) +
                                       " bytes, not its declared " +
                                       Twine(member.size) +
                                       " (corrupt archive)");
  return llvm::Error::success();
#else
  (void)compressed;
  (void)out;
  return failMember(member.name,
                    "is compressed, and this build has no zlib to inflate "
                    "it; save the archive with numpy.savez rather than "
                    "numpy.savez_compressed");
#endif
}

llvm::Error Reader::visit(
    bool inPlace,
    llvm::function_ref<llvm::Error(StringRef, StringRef, StringRef)> onMember) {
  llvm::Expected<Directory> dir = findDirectory();
  if (!dir)
    return dir.takeError();
  llvm::StringSet<> seen;
  uint64_t at = dir->offset, directoryEnd = dir->offset + dir->size;
  uint64_t nextFree = 0;
  for (uint64_t i = 0; i < dir->count; ++i) {
    llvm::Expected<Member> member = readCentral(at, directoryEnd);
    if (!member)
      return member.takeError();
    StringRef name = member->name;
    if (!name.ends_with(kSuffix))
      return failMember(name, "not a .npy member (an .npz archive of arrays "
                              "holds only NAME.npy members)");
    if (!seen.insert(name).second)
      return failMember(name, "appears twice in the archive");
    if (member->flags &
        (kFlagEncrypted | kFlagStrongEncryption | kFlagMaskedHeader))
      return failMember(name, "encrypted members are not supported");
    if (member->method != kMethodStored && member->method != kMethodDeflate)
      return failMember(name, "unsupported compression method " +
                                  Twine(member->method) +
                                  " (supported: 0, stored, as numpy.savez "
                                  "writes; 8, deflate, as "
                                  "numpy.savez_compressed writes)");
    if (member->method == kMethodStored &&
        member->compressedSize != member->size)
      return failMember(name, "stored with a compressed size of " +
                                  Twine(member->compressedSize) +
                                  " bytes but a size of " +
                                  Twine(member->size) + " (corrupt archive)");
    if (member->method == kMethodDeflate &&
        member->size / kMaxDeflateRatio > member->compressedSize)
      return failMember(name, "declares " + Twine(member->size) +
                                  " bytes, more than deflate can expand its " +
                                  Twine(member->compressedSize) +
                                  " compressed bytes to (corrupt archive)");
    if (inPlace && member->method != kMethodStored)
      return failMember(name, "is compressed; arrays read in place must be "
                              "stored uncompressed (as numpy.savez writes "
                              "them, not numpy.savez_compressed)");
    llvm::Expected<StringRef> stored =
        memberBytes(*member, dir->offset, nextFree);
    if (!stored)
      return stored.takeError();
    InflatedBytes inflated;
    StringRef data = *stored;
    if (member->method == kMethodDeflate) {
      if (llvm::Error err = inflate(*member, *stored, inflated))
        return err;
      data = StringRef(inflated.data(), member->size);
    }
    uint32_t crc = llvm::crc32(llvm::arrayRefFromStringRef(data));
    if (crc != member->crc)
      return failMember(
          name, "bad CRC-32: the archive records 0x" +
                    Twine(llvm::utohexstr(member->crc)) + ", its data has 0x" +
                    Twine(llvm::utohexstr(crc)) + " (corrupt archive)");
    if (llvm::Error err = onMember(name.drop_back(kSuffix.size()), data,
                                   (file + ": member " + quoted(name)).str()))
      return err;
  }
  return llvm::Error::success();
}

/// Every member parsed with `parse` (parseNpy or parseNpyView) into
/// `Entry`s of name and array.
template <typename Entry, typename Parse>
llvm::Expected<std::vector<Entry>> Reader::collect(bool inPlace, Parse parse) {
  std::vector<Entry> entries;
  llvm::Error err = visit(
      inPlace,
      [&](StringRef name, StringRef data, StringRef label) -> llvm::Error {
        auto array = parse(data, label);
        if (!array)
          return oneLine(array.takeError());
        entries.push_back({name.str(), std::move(*array)});
        return llvm::Error::success();
      });
  if (err)
    return err;
  return entries;
}

llvm::Expected<std::vector<NpzEntry>> Reader::read() {
  return collect<NpzEntry>(
      /*inPlace=*/false,
      [](StringRef data, StringRef label) { return parseNpy(data, label); });
}

llvm::Expected<std::vector<NpzView>> Reader::readInPlace() {
  return collect<NpzView>(/*inPlace=*/true,
                          [](StringRef data, StringRef label) {
                            return parseNpyView(data, label);
                          });
}

void put16(llvm::raw_ostream &os, uint16_t v) {
  char b[2] = {char(v), char(v >> 8)};
  os.write(b, 2);
}
void put32(llvm::raw_ostream &os, uint32_t v) {
  put16(os, uint16_t(v));
  put16(os, uint16_t(v >> 16));
}
void put64(llvm::raw_ostream &os, uint64_t v) {
  put32(os, uint32_t(v));
  put32(os, uint32_t(v >> 32));
}

llvm::Error writeError(const Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// What the writer needs of each member, computed before the first byte.
struct Planned {
  std::string memberName;
  std::string header;
  uint64_t size = 0, offset = 0;
  uint32_t crc = 0;
  bool utf8 = false;
};

/// The names are valid and unique, and each array's data is as long as its
/// shape says.
llvm::Error checkEntries(llvm::ArrayRef<NpzEntryRef> entries) {
  llvm::StringSet<> seen;
  for (const NpzEntryRef &entry : entries) {
    StringRef name = entry.name;
    if (name.empty())
      return writeError("an array has an empty name");
    if (name.contains('\0'))
      return writeError("the array name " + quoted(name) + " holds a NUL byte");
    if (name.size() > 0xffff - kSuffix.size())
      return writeError("the array name " + quoted(name.take_front(64)) +
                        "... is longer than 65,531 bytes");
    if (!seen.insert(name).second)
      return writeError("two arrays are named " + quoted(name));
    const NpyArray &array = *entry.array;
    std::optional<int64_t> bytes =
        checkedByteCount(array.shape, dtypeSize(array.dtype));
    if (!bytes || static_cast<uint64_t>(*bytes) != array.data.size())
      return writeError("the array " + quoted(name) + " (" + array.describe() +
                        ") holds " + Twine(array.data.size()) +
                        " bytes of data");
  }
  return llvm::Error::success();
}

llvm::Expected<std::vector<Planned>> plan(llvm::ArrayRef<NpzEntryRef> entries) {
  if (llvm::Error err = checkEntries(entries))
    return err;
  std::vector<Planned> planned;
  for (const NpzEntryRef &entry : entries) {
    StringRef name = entry.name;
    const NpyArray &array = *entry.array;
    Planned p;
    p.memberName = (name + kSuffix).str();
    // The .npy header alone: the bytes of an array with no data.
    NpyArray shapeOnly;
    shapeOnly.dtype = array.dtype;
    shapeOnly.shape = array.shape;
    p.header = serializeNpy(shapeOnly);
    p.size = p.header.size() + array.data.size();
    p.crc = llvm::crc32(llvm::arrayRefFromStringRef(p.header));
    p.crc = llvm::crc32(
        p.crc, llvm::ArrayRef<uint8_t>(
                   reinterpret_cast<const uint8_t *>(array.data.data()),
                   array.data.size()));
    p.utf8 = llvm::any_of(name, [](char c) { return uint8_t(c) >= 0x80; });
    planned.push_back(std::move(p));
  }
  return planned;
}

// 1980-01-01 00:00, the earliest DOS date: the archive's bytes depend only
// on its arrays.
constexpr uint16_t kDosTime = 0;
constexpr uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;
constexpr uint16_t kVersion = 20, kVersionZip64 = 45;
/// Made on Unix (high byte 3), as Python's zipfile says.
constexpr uint16_t kMadeBy = 3 << 8;
/// -rw-r--r--.
constexpr uint32_t kExternalAttributes = 0100644u << 16;
} // namespace

llvm::Expected<std::vector<NpzEntry>> mlir::gptq::parseNpz(StringRef bytes,
                                                           StringRef name) {
  return Reader(bytes, name).read();
}

llvm::Expected<std::vector<NpzView>>
mlir::gptq::parseNpzInPlace(StringRef bytes, StringRef name) {
  return Reader(bytes, name).readInPlace();
}

llvm::Expected<std::vector<NpzEntry>> mlir::gptq::readNpz(StringRef path) {
  // A device or a pipe may never end (/dev/zero): only files are read.
  llvm::sys::fs::file_status status;
  if (!llvm::sys::fs::status(path, status) &&
      status.type() != llvm::sys::fs::file_type::regular_file &&
      status.type() != llvm::sys::fs::file_type::directory_file)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": cannot read: not a regular file");
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        path + ": cannot read: " + buffer.getError().message());
  // Mapped while it is parsed (the arrays are copies).
  MappedInput guard((*buffer)->getBufferStart(), (*buffer)->getBufferSize(),
                    path);
  return parseNpz((*buffer)->getBuffer(), path);
}

llvm::Error mlir::gptq::detail::writeNpz(llvm::raw_ostream &os,
                                         llvm::ArrayRef<NpzEntryRef> entries,
                                         uint64_t zip64Limit) {
  llvm::Expected<std::vector<Planned>> planned = plan(entries);
  if (!planned)
    return planned.takeError();
  uint64_t offset = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    Planned &p = (*planned)[i];
    p.offset = offset;
    bool zip64 = p.size >= zip64Limit;
    put32(os, kLocalSignature);
    put16(os, zip64 ? kVersionZip64 : kVersion);
    put16(os, p.utf8 ? kFlagUtf8 : 0);
    put16(os, kMethodStored);
    put16(os, kDosTime);
    put16(os, kDosDate);
    put32(os, p.crc);
    put32(os, zip64 ? 0xffffffff : uint32_t(p.size));
    put32(os, zip64 ? 0xffffffff : uint32_t(p.size));
    put16(os, uint16_t(p.memberName.size()));
    put16(os, zip64 ? 20 : 0);
    os << p.memberName;
    if (zip64) {
      put16(os, kZip64ExtraId);
      put16(os, 16);
      put64(os, p.size);
      put64(os, p.size);
    }
    os << p.header;
    const NpyBuffer &data = entries[i].array->data;
    os.write(data.data(), data.size());
    offset += kLocalSize + p.memberName.size() + (zip64 ? 20 : 0) + p.size;
  }

  uint64_t directoryOffset = offset;
  for (const Planned &p : *planned) {
    bool bigSize = p.size >= zip64Limit, bigOffset = p.offset >= zip64Limit;
    uint16_t extraSize = (bigSize ? 16 : 0) + (bigOffset ? 8 : 0);
    if (extraSize)
      extraSize += 4;
    uint16_t version = extraSize ? kVersionZip64 : kVersion;
    put32(os, kCentralSignature);
    put16(os, kMadeBy | version);
    put16(os, version);
    put16(os, p.utf8 ? kFlagUtf8 : 0);
    put16(os, kMethodStored);
    put16(os, kDosTime);
    put16(os, kDosDate);
    put32(os, p.crc);
    put32(os, bigSize ? 0xffffffff : uint32_t(p.size));
    put32(os, bigSize ? 0xffffffff : uint32_t(p.size));
    put16(os, uint16_t(p.memberName.size()));
    put16(os, extraSize);
    put16(os, 0); // comment
    put16(os, 0); // disk
    put16(os, 0); // internal attributes
    put32(os, kExternalAttributes);
    put32(os, bigOffset ? 0xffffffff : uint32_t(p.offset));
    os << p.memberName;
    if (extraSize) {
      put16(os, kZip64ExtraId);
      put16(os, extraSize - 4);
      if (bigSize) {
        put64(os, p.size);
        put64(os, p.size);
      }
      if (bigOffset)
        put64(os, p.offset);
    }
    offset += kCentralSize + p.memberName.size() + extraSize;
  }

  uint64_t directorySize = offset - directoryOffset;
  uint64_t count = planned->size();
  bool manyMembers = count >= 0xffff;
  bool bigDirectorySize = directorySize >= zip64Limit;
  bool bigDirectoryOffset = directoryOffset >= zip64Limit;
  if (manyMembers || bigDirectorySize || bigDirectoryOffset) {
    put32(os, kZip64EndSignature);
    put64(os, kZip64EndSize - 12); // the size of the rest of the record
    put16(os, kMadeBy | kVersionZip64);
    put16(os, kVersionZip64);
    put32(os, 0); // this disk
    put32(os, 0); // the directory's disk
    put64(os, count);
    put64(os, count);
    put64(os, directorySize);
    put64(os, directoryOffset);
    put32(os, kZip64LocatorSignature);
    put32(os, 0); // the ZIP64 end record's disk
    put64(os, offset);
    put32(os, 1); // disks
  }
  put32(os, kEndSignature);
  put16(os, 0); // this disk
  put16(os, 0); // the directory's disk
  put16(os, manyMembers ? 0xffff : uint16_t(count));
  put16(os, manyMembers ? 0xffff : uint16_t(count));
  put32(os, bigDirectorySize ? 0xffffffff : uint32_t(directorySize));
  put32(os, bigDirectoryOffset ? 0xffffffff : uint32_t(directoryOffset));
  put16(os, 0); // comment
  return llvm::Error::success();
}

namespace {
std::vector<NpzEntryRef> refs(llvm::ArrayRef<NpzEntry> entries) {
  std::vector<NpzEntryRef> r;
  r.reserve(entries.size());
  for (const NpzEntry &e : entries)
    r.push_back({e.name, &e.array});
  return r;
}
} // namespace

llvm::Expected<std::string>
mlir::gptq::serializeNpz(llvm::ArrayRef<NpzEntryRef> entries) {
  std::string out;
  llvm::raw_string_ostream os(out);
  if (llvm::Error err = detail::writeNpz(os, entries, 0xffffffff))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "cannot make an .npz archive: " +
                                       llvm::toString(std::move(err)));
  return out;
}

llvm::Error mlir::gptq::writeNpz(PendingOutputs &outputs, StringRef path,
                                 llvm::ArrayRef<NpzEntryRef> entries) {
  // Checked before a temporary file is made.
  if (llvm::Error err = checkEntries(entries))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "cannot write '" + path +
                                       "': " + llvm::toString(std::move(err)));
  return outputs.add(path, [&](llvm::raw_ostream &os) {
    return detail::writeNpz(os, entries, 0xffffffff);
  });
}

llvm::Error mlir::gptq::writeNpz(PendingOutputs &outputs, StringRef path,
                                 llvm::ArrayRef<NpzEntry> entries) {
  return writeNpz(outputs, path, refs(entries));
}
