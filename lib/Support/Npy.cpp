//===- Npy.cpp - .npy array files -----------------------------------------===//

#include "gptq/Support/Npy.h"
#include "gptq/Support/Output.h"
#include "gptq/Support/Signals.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

using namespace mlir::gptq;
using llvm::StringRef;

namespace {
/// Text from a file as a message quotes it: control and non-ASCII bytes
/// escaped, so that the message stays one line.
std::string escaped(StringRef text) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os.write_escaped(text, /*UseHexEscapes=*/true);
  return out;
}
} // namespace

namespace {
struct DTypeInfo {
  DType dtype;
  const char *descr;
  const char *name;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::F32, "<f4", "float32", 4}, {DType::F64, "<f8", "float64", 8},
    {DType::I8, "|i1", "int8", 1},     {DType::U8, "|u1", "uint8", 1},
    {DType::I16, "<i2", "int16", 2},   {DType::I32, "<i4", "int32", 4},
    {DType::I64, "<i8", "int64", 8},   {DType::Bool, "|b1", "bool", 1},
    {DType::F16, "<f2", "float16", 2}, {DType::BF16, "", "bfloat16", 2},
};

const DTypeInfo &info(DType dtype) {
  for (const DTypeInfo &i : kDTypes)
    if (i.dtype == dtype)
      return i;
  llvm_unreachable("unknown dtype");
}

llvm::Error fail(StringRef name, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 name + ": " + message);
}

/// The value of `'key':` in a header dictionary, up to the next top-level
/// comma or closing brace.
std::optional<StringRef> headerValue(StringRef header, StringRef key) {
  std::string quoted = ("'" + key + "'").str();
  size_t at = header.find(quoted);
  if (at == StringRef::npos)
    return std::nullopt;
  StringRef rest = header.drop_front(at + quoted.size()).ltrim();
  if (!rest.consume_front(":"))
    return std::nullopt;
  rest = rest.ltrim();
  int depth = 0;
  size_t end = 0;
  for (; end < rest.size(); ++end) {
    char c = rest[end];
    if (c == '(' || c == '[')
      ++depth;
    else if (c == ')' || c == ']')
      --depth;
    else if ((c == ',' || c == '}') && depth == 0)
      break;
  }
  return rest.take_front(end).trim();
}
} // namespace

float mlir::gptq::halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff, bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000 | (mantissa << 13); // inf, nan
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign; // zero
  } else {
    // Subnormal: shift the mantissa up to a normal float32's.
    int shift = 0;
    while (!(mantissa & 0x400)) {
      mantissa <<= 1;
      ++shift;
    }
    bits = sign | uint32_t(113 - shift) << 23 | ((mantissa & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

void mlir::gptq::widenToFloat32(DType dtype, const char *data, size_t count,
                                float *out) {
  switch (dtype) {
  case DType::F32:
    std::memcpy(out, data, count * sizeof(float));
    return;
  case DType::BF16:
    for (size_t i = 0; i < count; ++i) {
      uint16_t bits;
      std::memcpy(&bits, data + 2 * i, 2);
      out[i] = bfloat16ToFloat(bits);
    }
    return;
  case DType::F16:
    for (size_t i = 0; i < count; ++i) {
      uint16_t bits;
      std::memcpy(&bits, data + 2 * i, 2);
      out[i] = halfToFloat(bits);
    }
    return;
  default:
    llvm::report_fatal_error("widenToFloat32 of a non-float dtype");
  }
}

size_t mlir::gptq::dtypeSize(DType dtype) { return info(dtype).size; }
StringRef mlir::gptq::dtypeName(DType dtype) { return info(dtype).name; }

std::optional<int64_t>
mlir::gptq::checkedByteCount(llvm::ArrayRef<int64_t> shape,
                             uint64_t elementSize) {
  if (elementSize > static_cast<uint64_t>(INT64_MAX))
    return std::nullopt;
  // `bound` counts each dimension as at least 1: every partial product (and
  // so every stride) of the shape fits when it does.
  std::optional<int64_t> bound = static_cast<int64_t>(elementSize);
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0)
      return std::nullopt;
    empty |= d == 0;
    bound = llvm::checkedMul<int64_t>(*bound, std::max<int64_t>(d, 1));
    if (!bound)
      return std::nullopt;
  }
  return empty ? 0 : *bound;
}

std::optional<int64_t>
mlir::gptq::checkedNumElements(llvm::ArrayRef<int64_t> shape) {
  return checkedByteCount(shape, 1);
}

int64_t NpyArray::numElements() const {
  std::optional<int64_t> n = checkedNumElements(shape);
  if (!n)
    llvm::report_fatal_error("array shape " + llvm::Twine(describe()) +
                             " has a negative dimension or overflows");
  return *n;
}

namespace {
std::string describeArray(DType dtype, llvm::ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << dtypeName(dtype) << " [";
  llvm::interleaveComma(shape, os);
  os << "]";
  return s;
}
} // namespace

std::string NpyArray::describe() const { return describeArray(dtype, shape); }
std::string NpyView::describe() const { return describeArray(dtype, shape); }

NpyBuffer::NpyBuffer(size_t size) { assign(size, 0); }

NpyBuffer::NpyBuffer(const NpyBuffer &other) {
  assign(other.begin(), other.end());
}

NpyBuffer &NpyBuffer::operator=(const NpyBuffer &other) {
  if (this != &other)
    assign(other.begin(), other.end());
  return *this;
}

NpyBuffer::NpyBuffer(NpyBuffer &&other) noexcept
    : ptr(other.ptr), length(other.length), owner(other.owner),
      release(other.release) {
  other.ptr = nullptr;
  other.length = 0;
  other.owner = nullptr;
  other.release = nullptr;
}

NpyBuffer &NpyBuffer::operator=(NpyBuffer &&other) noexcept {
  if (this != &other) {
    reset();
    std::swap(ptr, other.ptr);
    std::swap(length, other.length);
    std::swap(owner, other.owner);
    std::swap(release, other.release);
  }
  return *this;
}

NpyBuffer::~NpyBuffer() { reset(); }

void NpyBuffer::reset() {
  if (release)
    release(owner);
  ptr = nullptr;
  length = 0;
  owner = nullptr;
  release = nullptr;
}

NpyBuffer NpyBuffer::adopt(char *data, size_t size, void *owner,
                           void (*release)(void *)) {
  NpyBuffer b;
  b.ptr = data;
  b.length = size;
  b.owner = owner;
  b.release = release;
  return b;
}

void NpyBuffer::assign(size_t size, char value) {
  reset();
  // calloc hands out fresh pages already zeroed.
  void *p = value == 0 ? std::calloc(std::max<size_t>(size, 1), 1)
                       : std::malloc(std::max<size_t>(size, 1));
  if (!p)
    llvm::report_bad_alloc_error("out of memory for an array");
  if (value != 0)
    std::memset(p, value, size);
  ptr = static_cast<char *>(p);
  length = size;
  owner = p;
  release = std::free;
}

void NpyBuffer::assign(const char *first, const char *last) {
  size_t size = static_cast<size_t>(last - first);
  void *p = std::malloc(std::max<size_t>(size, 1));
  if (!p)
    llvm::report_bad_alloc_error("out of memory for an array");
  if (size)
    std::memcpy(p, first, size);
  reset();
  ptr = static_cast<char *>(p);
  length = size;
  owner = p;
  release = std::free;
}

bool NpyBuffer::operator==(const NpyBuffer &other) const {
  return length == other.length &&
         (length == 0 || std::memcmp(ptr, other.ptr, length) == 0);
}

NpyArray NpyArray::borrowed() const {
  return borrowing(dtype, shape, llvm::ArrayRef(data.data(), data.size()));
}

NpyArray NpyArray::borrowing(DType dtype, std::vector<int64_t> shape,
                             llvm::ArrayRef<char> data) {
  NpyArray v;
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.data = NpyBuffer::adopt(const_cast<char *>(data.data()), data.size(),
                            nullptr, [](void *) {});
  return v;
}

NpyArray NpyArray::zeros(DType dtype, std::vector<int64_t> shape) {
  NpyArray a;
  a.dtype = dtype;
  a.shape = std::move(shape);
  std::optional<int64_t> bytes = checkedByteCount(a.shape, dtypeSize(dtype));
  if (!bytes)
    llvm::report_fatal_error("cannot make an array of " +
                             llvm::Twine(a.describe()) +
                             ": its size overflows");
  a.data.assign(static_cast<size_t>(*bytes), 0);
  return a;
}

namespace {
/// Parses the header of the .npy bytes `bytes`: the array's dtype and shape,
/// and the offset of its data, which is checked to be exactly as long as
/// they say. The array's data is left empty.
llvm::Expected<NpyArray> parseHeader(StringRef bytes, StringRef name,
                                     size_t &dataStart) {
  if (bytes.size() < 10 || !bytes.starts_with("\x93NUMPY"))
    return fail(name, "not a .npy file (missing the \\x93NUMPY magic)");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = static_cast<unsigned char>(bytes[8]) |
                (static_cast<unsigned char>(bytes[9]) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return fail(name, "truncated .npy header");
    headerLen = 0;
    for (int i = 0; i < 4; ++i)
      headerLen |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i]))
                   << (8 * i);
    headerStart = 12;
  } else {
    return fail(name, "unsupported .npy format version " + llvm::Twine(major));
  }
  if (headerStart + headerLen > bytes.size())
    return fail(name, "truncated .npy header");
  StringRef header = bytes.substr(headerStart, headerLen);

  std::optional<StringRef> descr = headerValue(header, "descr");
  std::optional<StringRef> order = headerValue(header, "fortran_order");
  std::optional<StringRef> shapeText = headerValue(header, "shape");
  if (!descr || !order || !shapeText)
    return fail(name, "malformed .npy header '" + escaped(header.trim()) + "'");

  NpyArray array;
  StringRef d = descr->trim("'\"");
  // Single-byte types may be written with any byte-order mark.
  if (d == "<i1" || d == "=i1")
    d = "|i1";
  if (d == "<u1" || d == "=u1")
    d = "|u1";
  if (d == "<b1" || d == "=b1")
    d = "|b1";
  const DTypeInfo *found = nullptr;
  for (const DTypeInfo &i : kDTypes)
    if (*i.descr && d == i.descr)
      found = &i;
  if (!found)
    return fail(name, "unsupported dtype '" + d +
                          "' (supported: float32, float64, float16, int8, "
                          "uint8, int16, int32, int64, bool; little-endian)");
  array.dtype = found->dtype;
  if (*order != "False")
    return fail(name, "Fortran-order arrays are not supported; save a "
                      "C-contiguous array");

  StringRef dims = shapeText->trim();
  if (!dims.consume_front("(") || !dims.consume_back(")"))
    return fail(name, "malformed shape '" + escaped(*shapeText) + "'");
  llvm::SmallVector<StringRef> parts;
  dims.split(parts, ',', -1, /*KeepEmpty=*/false);
  for (StringRef p : parts) {
    p = p.trim();
    if (p.empty())
      continue;
    int64_t v;
    if (p.getAsInteger(10, v) || v < 0)
      return fail(name, "malformed shape '" + escaped(*shapeText) + "'");
    array.shape.push_back(v);
  }
  std::optional<int64_t> expected = checkedByteCount(array.shape, found->size);
  if (!expected)
    return fail(name, "the shape " + *shapeText + " is too large for " +
                          found->name +
                          " data: its size in bytes overflows a 64-bit "
                          "integer");
  dataStart = headerStart + headerLen;
  if (bytes.size() - dataStart != static_cast<uint64_t>(*expected))
    return fail(name, "expected " + llvm::Twine(*expected) +
                          " bytes of data for " + array.describe() +
                          ", found " + llvm::Twine(bytes.size() - dataStart) +
                          " (truncated or corrupt file)");
  return array;
}

/// The .npy header (magic, version, header dict, padding) of `array`.
std::string npyHeader(const NpyArray &array) {
  if (!*info(array.dtype).descr)
    llvm::report_fatal_error(llvm::Twine("no .npy dtype holds ") +
                             info(array.dtype).name + " elements");
  std::string shape = "(";
  for (int64_t d : array.shape)
    shape += std::to_string(d) + ",";
  if (array.shape.size() > 1)
    shape.pop_back();
  shape += ")";
  std::string header = std::string("{'descr': '") + info(array.dtype).descr +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  return out;
}

} // namespace

llvm::Expected<NpyArray> mlir::gptq::parseNpy(StringRef bytes, StringRef name) {
  size_t dataStart;
  auto array = parseHeader(bytes, name, dataStart);
  if (array)
    array->data.assign(bytes.data() + dataStart, bytes.data() + bytes.size());
  return array;
}

llvm::Expected<NpyView> mlir::gptq::parseNpyView(StringRef bytes,
                                                 StringRef name) {
  size_t dataStart;
  auto array = parseHeader(bytes, name, dataStart);
  if (!array)
    return array.takeError();
  NpyView view;
  view.dtype = array->dtype;
  view.shape = std::move(array->shape);
  view.data = bytes.drop_front(dataStart);
  return view;
}

llvm::Expected<NpyArray> mlir::gptq::readNpy(StringRef path) {
  // The file's buffer becomes the array's: its data is taken over rather
  // than copied when it is aligned (as the 64-byte padded headers NumPy
  // writes leave it).
  constexpr size_t kAlign = 64;
  // A device or a pipe may never end (/dev/zero): only files are read.
  llvm::sys::fs::file_status status;
  if (!llvm::sys::fs::status(path, status) &&
      status.type() != llvm::sys::fs::file_type::regular_file &&
      status.type() != llvm::sys::fs::file_type::directory_file)
    return fail(path, "cannot read: not a regular file");
  auto buffer = llvm::WritableMemoryBuffer::getFile(path, /*IsVolatile=*/false,
                                                    llvm::Align(kAlign));
  if (!buffer)
    return fail(path, "cannot read: " + buffer.getError().message());
  size_t dataStart;
  StringRef bytes((*buffer)->getBufferStart(), (*buffer)->getBufferSize());
  auto array = parseHeader(bytes, path, dataStart);
  if (!array)
    return array.takeError();
  char *data = (*buffer)->getBufferStart() + dataStart;
  size_t size = bytes.size() - dataStart;
  if (dataStart % kAlign != 0) {
    array->data.assign(data, data + size);
    return array;
  }
  // The data stays in the (possibly mapped) file's buffer, guarded so that
  // a file that shrinks under the run is an error naming it.
  struct Owner {
    std::unique_ptr<llvm::WritableMemoryBuffer> buffer;
    MappedInput guard;
  };
  const char *start = (*buffer)->getBufferStart();
  size_t total = (*buffer)->getBufferSize();
  auto *owner = new Owner{std::move(*buffer), MappedInput(start, total, path)};
  array->data = NpyBuffer::adopt(data, size, owner, [](void *p) {
    delete static_cast<Owner *>(p);
  });
  return array;
}

std::string mlir::gptq::serializeNpy(const NpyArray &array) {
  std::string out = npyHeader(array);
  out.append(array.data.begin(), array.data.end());
  return out;
}

void mlir::gptq::writeNpy(llvm::raw_ostream &os, const NpyArray &array) {
  os << npyHeader(array);
  os.write(array.data.data(), array.data.size());
}

llvm::Error mlir::gptq::writeNpy(PendingOutputs &outputs, StringRef path,
                                 const NpyArray &array) {
  return outputs.add(path, [&](llvm::raw_ostream &os) {
    writeNpy(os, array);
    return llvm::Error::success();
  });
}

llvm::Error mlir::gptq::writeNpy(StringRef path, const NpyArray &array) {
  PendingOutputs outputs;
  if (llvm::Error err = writeNpy(outputs, path, array))
    return err;
  return outputs.commit();
}
