//===- Call.cpp - Call compiled entry functions on arrays -----------------===//

#include "gptq/Execution/Call.h"
#include "gptq/Support/Output.h"

#include "gptq/Runtime/Allocator.h"
#include "gptq/Runtime/Checks.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

using namespace mlir::gptq;
using llvm::ArrayRef;

namespace {
llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}
} // namespace

std::string ArgSpec::describe() const {
  std::string s = dtypeName(dtype).str();
  if (scalar)
    return s + " scalar";
  s += " [";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += shape[i] == kDynamicSize ? "?" : std::to_string(shape[i]);
  }
  return s + "]";
}

namespace {
/// Writes the memref descriptor of a C-order array at `data` (allocated and
/// aligned pointers, offset, sizes, strides: 3 + 2 * rank words) to `desc`.
void writeContiguousDescriptor(int64_t *desc, const char *data,
                               ArrayRef<int64_t> shape) {
  size_t rank = shape.size();
  desc[0] = desc[1] = reinterpret_cast<int64_t>(data);
  desc[2] = 0;
  int64_t stride = 1;
  for (size_t d = rank; d-- > 0;) {
    desc[3 + d] = shape[d];
    desc[3 + rank + d] = stride;
    stride *= shape[d];
  }
}

std::vector<int64_t> contiguousDescriptor(const char *data,
                                          ArrayRef<int64_t> shape) {
  std::vector<int64_t> desc(3 + 2 * shape.size());
  writeContiguousDescriptor(desc.data(), data, shape);
  return desc;
}
} // namespace

namespace {
/// Checks that `a` (named `label` in messages) fits `spec` and holds the
/// bytes its shape says.
llvm::Error checkArgument(const NpyArray &a, const ArgSpec &spec,
                          const std::string &label) {
  bool dtypeOk = a.dtype == spec.dtype ||
                 (spec.dtype == DType::I8 && a.dtype == DType::U8);
  bool rankOk =
      spec.scalar ? a.shape.empty() : a.shape.size() == spec.shape.size();
  bool sizesOk = rankOk;
  for (size_t d = 0; sizesOk && !spec.scalar && d < spec.shape.size(); ++d)
    sizesOk = spec.shape[d] == kDynamicSize || spec.shape[d] == a.shape[d];
  if (!dtypeOk || !sizesOk)
    return error(label + ": expected " + spec.describe() + ", found " +
                 a.describe());
  std::optional<int64_t> bytes = checkedByteCount(a.shape, dtypeSize(a.dtype));
  if (!bytes)
    return error(label + ": " + a.describe() +
                 " has a negative dimension or a size that overflows");
  if (a.data.size() != static_cast<uint64_t>(*bytes))
    return error(label + ": " + a.describe() + " holds " +
                 llvm::Twine(a.data.size()) + " bytes of data, not " +
                 llvm::Twine(*bytes));
  return llvm::Error::success();
}

/// The words of a memref descriptor of `rank`.
size_t descriptorWords(size_t rank) { return 3 + 2 * rank; }

/// What a call passes, and where the results come back: `packed` points
/// into the other members, so a frame stays where it was made.
struct CallFrame {
  /// The memref arguments' copies, which the code may write.
  std::vector<NpyArray> copies;
  /// Each argument's descriptor (or its value, for a scalar).
  std::vector<std::vector<int64_t>> descriptors;
  std::vector<void *> argPointers;
  /// The weights' descriptors share one allocation (a model has hundreds).
  std::vector<int64_t> weightDescriptors;
  std::vector<void *> weightPointers;
  /// The results' descriptors, written by the code.
  std::vector<int64_t> resultBuffer;
  void *resultPointer = nullptr;
  /// The pointer to the results, then one per argument and weight.
  std::vector<void *> packed;
};

/// Checks the caller's arguments against `entry` and writes their
/// descriptors into `frame`. Tensor arguments are never written
/// (gptq-export-entry-points marks them read-only); memref arguments may
/// be, so those are copied unless the caller hands them over to be
/// written.
llvm::Error packArguments(CallFrame &frame, const PackedEntry &entry,
                          const std::vector<NpyArray> &args,
                          const std::vector<std::string> &names,
                          bool writeMemRefsInPlace) {
  frame.copies.reserve(args.size());
  frame.descriptors.resize(args.size());
  frame.argPointers.resize(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgSpec &spec = entry.inputs[i];
    const NpyArray *source = &args[i];
    if (spec.isMemRef && !writeMemRefsInPlace) {
      frame.copies.push_back(args[i]);
      source = &frame.copies.back();
    }
    const NpyArray &a = *source;
    std::string label = "argument #" + std::to_string(i) +
                        (i < names.size() ? " (" + names[i] + ")" : "");
    if (llvm::Error err = checkArgument(a, spec, label))
      return err;
    std::vector<int64_t> &desc = frame.descriptors[i];
    if (spec.scalar) {
      desc.assign(1, 0);
      std::memcpy(desc.data(), a.data.data(), dtypeSize(a.dtype));
    } else {
      desc = contiguousDescriptor(a.data.data(), a.shape);
    }
    frame.argPointers[i] = desc.data();
  }
  return llvm::Error::success();
}

/// Writes the weights' descriptors, the results' space and the packed
/// pointers into `frame`, whose arguments are packed.
void packCall(CallFrame &frame, const PackedEntry &entry,
              llvm::ArrayRef<EntryWeight> weights) {
  // The weights, in place, after the caller's arguments.
  size_t weightWords = 0;
  for (const EntryWeight &w : weights)
    weightWords += descriptorWords(w.shape.size());
  frame.weightDescriptors.resize(weightWords);
  frame.weightPointers.resize(weights.size());
  for (size_t i = 0, at = 0; i < weights.size(); ++i) {
    writeContiguousDescriptor(frame.weightDescriptors.data() + at,
                              weights[i].data, weights[i].shape);
    frame.weightPointers[i] = frame.weightDescriptors.data() + at;
    at += descriptorWords(weights[i].shape.size());
  }
  size_t resultWords = 0;
  for (const ArgSpec &r : entry.results)
    resultWords += descriptorWords(r.shape.size());
  frame.resultBuffer.assign(std::max<size_t>(resultWords, 1), 0);
  frame.resultPointer = frame.resultBuffer.data();

  if (!entry.results.empty())
    frame.packed.push_back(&frame.resultPointer);
  for (size_t i = 0; i < frame.descriptors.size(); ++i) {
    // Scalars are passed by value: point at the value itself.
    if (entry.inputs[i].scalar)
      frame.packed.push_back(frame.descriptors[i].data());
    else
      frame.packed.push_back(&frame.argPointers[i]);
  }
  for (void *&pointer : frame.weightPointers)
    frame.packed.push_back(&pointer);
}

/// Checks the shapes the code returned before any is used: a negative or
/// overflowing one is an error, and then each allocation is freed once
/// with `freeFn`.
llvm::Error checkResultShapes(const PackedEntry &entry,
                              ArrayRef<int64_t> resultBuffer,
                              void (*freeFn)(void *)) {
  const std::vector<ArgSpec> &specs = entry.results;
  for (size_t i = 0, at = 0; i < specs.size(); ++i) {
    size_t rank = specs[i].shape.size();
    ArrayRef<int64_t> shape = resultBuffer.slice(at + 3, rank);
    at += descriptorWords(rank);
    if (checkedByteCount(shape, dtypeSize(specs[i].dtype)))
      continue;
    llvm::SmallPtrSet<void *, 8> allocations;
    for (size_t j = 0, at2 = 0; j < specs.size(); ++j) {
      allocations.insert(reinterpret_cast<void *>(resultBuffer[at2]));
      at2 += descriptorWords(specs[j].shape.size());
    }
    for (void *allocation : allocations)
      if (allocation)
        freeFn(allocation);
    std::string dims;
    llvm::raw_string_ostream os(dims);
    llvm::interleaveComma(shape, os);
    return error("result #" + llvm::Twine(i) + " of '" + entry.name +
                 "' has the shape [" + dims +
                 "], which has a negative dimension or a size that "
                 "overflows");
  }
  return llvm::Error::success();
}

/// Copies the strided elements of `desc` (of `elem` bytes, from `base`)
/// into `out`, in C order.
void copyStrided(NpyArray &out, const int64_t *desc, const char *base,
                 size_t elem) {
  size_t rank = out.shape.size();
  int64_t n = out.numElements();
  out.data = NpyBuffer(n * elem);
  std::vector<int64_t> index(rank, 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d)
      offset += index[d] * desc[3 + rank + d];
    std::memcpy(out.data.data() + k * elem, base + offset * elem, elem);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < out.shape[d])
        break;
      index[d] = 0;
    }
  }
}

/// The result of `spec` at descriptor `desc`: the first contiguous result
/// of its allocation takes the allocation over (recorded in `adopted`, to
/// be freed with `freeFn`); the others are copied. `seen` records the
/// allocations met.
NpyArray takeResult(const ArgSpec &spec, const int64_t *desc,
                    llvm::SmallPtrSetImpl<void *> &seen,
                    llvm::SmallPtrSetImpl<void *> &adopted,
                    void (*freeFn)(void *)) {
  size_t rank = spec.shape.size();
  NpyArray out;
  out.dtype = spec.dtype;
  out.shape.assign(desc + 3, desc + 3 + rank);
  size_t elem = dtypeSize(spec.dtype);
  int64_t n = out.numElements();
  char *base = reinterpret_cast<char *>(desc[1]) + desc[2] * elem;
  auto *allocation = reinterpret_cast<void *>(desc[0]);
  bool contiguous = true;
  for (int64_t d = rank, stride = 1; d-- > 0; stride *= out.shape[d])
    contiguous &= out.shape[d] == 1 || desc[3 + rank + d] == stride;
  bool first = allocation && seen.insert(allocation).second;
  if (contiguous && first) {
    adopted.insert(allocation);
    out.data = NpyBuffer::adopt(base, n * elem, allocation, freeFn);
  } else if (contiguous) {
    out.data.assign(base, base + n * elem);
  } else {
    copyStrided(out, desc, base, elem);
  }
  return out;
}
} // namespace

llvm::Expected<std::vector<NpyArray>> mlir::gptq::callPackedEntry(
    const PackedEntry &entry, llvm::ArrayRef<EntryWeight> weights,
    const std::vector<NpyArray> &args, const std::vector<std::string> &names,
    bool writeMemRefsInPlace) {
  if (args.size() != entry.inputs.size())
    return error("'" + entry.name + "' takes " +
                 llvm::Twine(entry.inputs.size()) + " argument(s), " +
                 llvm::Twine(args.size()) + " given");
  // Each argument travels as a pointer to its descriptor (or its value),
  // after the pointer to the results.
  CallFrame frame;
  if (llvm::Error err =
          packArguments(frame, entry, args, names, writeMemRefsInPlace))
    return std::move(err);
  packCall(frame, entry, weights);
  // A failed run-time check (a dynamic size or an index the verifiers could
  // not check) returns here with its message, before any result exists.
  if (const char *failure =
          gptq_runtime_call_checked(entry.function, frame.packed.data()))
    return error(failure);

  // The deallocation pipeline makes every returned buffer a fresh
  // allocation owned by the caller (it clones arguments and constants). The
  // first contiguous result of each allocation takes it over without a
  // copy; the others are copied, and allocations no result took over are
  // freed once, after every copy.
  void (*freeFn)(void *) = entry.freeResult         ? entry.freeResult
                           : entry.runtimeAllocator ? _mlir_memref_to_llvm_free
                                                    : std::free;
  if (llvm::Error err = checkResultShapes(entry, frame.resultBuffer, freeFn))
    return std::move(err);
  std::vector<NpyArray> results;
  llvm::SmallPtrSet<void *, 8> seen, adopted;
  size_t at = 0;
  for (const ArgSpec &spec : entry.results) {
    results.push_back(takeResult(spec, frame.resultBuffer.data() + at, seen,
                                 adopted, freeFn));
    at += descriptorWords(spec.shape.size());
  }
  for (void *allocation : seen)
    if (!adopted.contains(allocation))
      freeFn(allocation);
  return results;
}

llvm::Expected<std::vector<NpyArray>> mlir::gptq::callRepeatedly(
    unsigned repeat,
    llvm::function_ref<llvm::Expected<std::vector<NpyArray>>()> call,
    std::vector<double> &seconds) {
  llvm::Expected<std::vector<NpyArray>> results = std::vector<NpyArray>();
  for (unsigned r = 0; r < std::max(repeat, 1u); ++r) {
    auto start = std::chrono::steady_clock::now();
    results = call();
    if (!results)
      return results.takeError();
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
  }
  return results;
}

llvm::Error mlir::gptq::checkDeviceName(llvm::StringRef device) {
  if (device == "cpu" || device == "cuda" || device == "cuda-emulated")
    return llvm::Error::success();
  return error("unknown --device '" + device +
               "' (expected cpu, cuda or cuda-emulated)");
}

std::string mlir::gptq::resultPath(llvm::StringRef dir, size_t index) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, std::to_string(index) + ".npy");
  return std::string(path);
}

llvm::Error mlir::gptq::checkResultFiles(llvm::StringRef dir, size_t numResults,
                                         llvm::ArrayRef<std::string> inputs,
                                         llvm::StringRef entry) {
  for (size_t i = 0; i < numResults; ++i)
    if (llvm::Error err = checkNotAnInput(resultPath(dir, i), inputs))
      return error(llvm::toString(std::move(err)) + " (--output-dir)");
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    size_t index;
    if (name.consume_back(".npy") && !name.getAsInteger(10, index) &&
        index >= numResults)
      return error("'" + it->path() + "' is left from another run: '" + entry +
                   "' has " + llvm::Twine(numResults) +
                   " result(s), so it would look like a result of this one; "
                   "remove it or choose another --output-dir");
  }
  return llvm::Error::success();
}

llvm::Error mlir::gptq::writeResults(llvm::StringRef dir,
                                     llvm::ArrayRef<NpyArray> results) {
  if (llvm::Error err = createOutputDirectory(dir))
    return err;
  PendingOutputs outputs;
  for (size_t i = 0; i < results.size(); ++i)
    if (llvm::Error err = writeNpy(outputs, resultPath(dir, i), results[i]))
      return err;
  return outputs.commit();
}
