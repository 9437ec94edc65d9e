//===- Npy.h - .npy array files ---------------------------------*- C++ -*-===//
//
// Reading and writing NumPy's .npy format (versions 1.0 to 3.0, C order,
// little-endian), the exchange format of every gptq tool.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_SUPPORT_NPY_H
#define GPTQ_SUPPORT_NPY_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
namespace gptq {

class PendingOutputs;

/// Element types the tools exchange, and the 16-bit floats that weights are
/// stored in (F16 is .npy's float16; BF16 has no .npy form: it is read only
/// from parameter archives, see Safetensors.h, and never written as .npy).
enum class DType { F32, F64, I8, U8, I16, I32, I64, Bool, F16, BF16 };

/// Size in bytes of one element.
size_t dtypeSize(DType dtype);
/// The NumPy name, e.g. "float32".
llvm::StringRef dtypeName(DType dtype);

/// The number of bytes of an array of `shape` with elements of
/// `elementSize` bytes, or nullopt when a dimension is negative or the size
/// does not fit in int64_t. Every size computed from a file, a command line
/// or IR goes through this one check. A zero dimension makes the array
/// empty, but the other dimensions must still fit together (as if each
/// counted at least 1), so that the array's strides never overflow either.
std::optional<int64_t> checkedByteCount(llvm::ArrayRef<int64_t> shape,
                                        uint64_t elementSize);
/// The number of elements of `shape`, under the same checks.
std::optional<int64_t> checkedNumElements(llvm::ArrayRef<int64_t> shape);

/// The bytes of an array. Owned (malloc'd), or adopted from a buffer that
/// compiled code returned, which is released with the function that came
/// with it; either way the buffer is freed exactly once. Copies are deep.
class NpyBuffer {
public:
  NpyBuffer() = default;
  /// `size` zero bytes.
  explicit NpyBuffer(size_t size);
  NpyBuffer(const NpyBuffer &other);
  NpyBuffer &operator=(const NpyBuffer &other);
  NpyBuffer(NpyBuffer &&other) noexcept;
  NpyBuffer &operator=(NpyBuffer &&other) noexcept;
  ~NpyBuffer();

  /// Takes `size` bytes at `data`, inside the allocation `owner`, which
  /// `release(owner)` frees.
  static NpyBuffer adopt(char *data, size_t size, void *owner,
                         void (*release)(void *));

  char *data() { return ptr; }
  const char *data() const { return ptr; }
  size_t size() const { return length; }
  char *begin() { return ptr; }
  char *end() { return ptr + length; }
  const char *begin() const { return ptr; }
  const char *end() const { return ptr + length; }
  char &operator[](size_t i) { return ptr[i]; }
  char operator[](size_t i) const { return ptr[i]; }
  /// Replaces the contents with `size` copies of `value`.
  void assign(size_t size, char value);
  /// Replaces the contents with the bytes [first, last).
  void assign(const char *first, const char *last);
  bool operator==(const NpyBuffer &other) const;

private:
  void reset();
  char *ptr = nullptr;
  size_t length = 0;
  void *owner = nullptr;
  void (*release)(void *) = nullptr;
};

/// A dense C-order array.
struct NpyArray {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  NpyBuffer data;

  /// The number of elements. The shape must have passed
  /// checkedNumElements (every array parsed or made by zeros() has); a shape
  /// that overflows ends the program rather than wrap.
  int64_t numElements() const;
  /// "float32 [3, 4]".
  std::string describe() const;
  template <typename T>
  T *as() {
    return reinterpret_cast<T *>(data.data());
  }
  template <typename T>
  const T *as() const {
    return reinterpret_cast<const T *>(data.data());
  }
  /// An array of the given type and shape, zero-filled. The shape must pass
  /// checkedByteCount (check shapes from files or IR first); one that does
  /// not ends the program rather than wrap.
  static NpyArray zeros(DType dtype, std::vector<int64_t> shape);
  /// An array that reads this one's data in place without owning it
  /// (for read-only arguments of compiled code); it must not outlive it.
  NpyArray borrowed() const;
  /// An array of `dtype` and `shape` that reads `data` in place without
  /// owning it; it must not outlive the data.
  static NpyArray borrowing(DType dtype, std::vector<int64_t> shape,
                            llvm::ArrayRef<char> data);
};

/// A dense C-order array whose data lies in memory held elsewhere (a
/// mapped file, say), read in place.
struct NpyView {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  llvm::StringRef data;
  /// "float32 [3, 4]".
  std::string describe() const;
};

/// The float32 value of an IEEE half-precision or a bfloat16 number, exact.
float halfToFloat(uint16_t bits);
inline float bfloat16ToFloat(uint16_t bits) {
  uint32_t wide = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

/// `count` elements of dtype `dtype` (F32, F16 or BF16) at `data` as
/// float32, exactly (every such number is a float32), into `out`.
void widenToFloat32(DType dtype, const char *data, size_t count, float *out);

/// Parses .npy bytes; `name` is used in error messages.
llvm::Expected<NpyArray> parseNpy(llvm::StringRef bytes, llvm::StringRef name);
/// Parses .npy bytes with the checks of parseNpy, without copying the data:
/// the view's data points into `bytes`.
llvm::Expected<NpyView> parseNpyView(llvm::StringRef bytes,
                                     llvm::StringRef name);
/// Reads a .npy file.
llvm::Expected<NpyArray> readNpy(llvm::StringRef path);
/// The .npy bytes of an array (format version 1.0).
std::string serializeNpy(const NpyArray &array);
/// Writes the .npy bytes of an array (format version 1.0) to a stream.
void writeNpy(llvm::raw_ostream &os, const NpyArray &array);
/// Writes a .npy file atomically (see Output.h): a failed write leaves no
/// partial file.
llvm::Error writeNpy(llvm::StringRef path, const NpyArray &array);
/// Adds a .npy file to a set of outputs written together (see Output.h).
llvm::Error writeNpy(PendingOutputs &outputs, llvm::StringRef path,
                     const NpyArray &array);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_SUPPORT_NPY_H
