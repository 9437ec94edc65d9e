//===- Call.h - Call compiled entry functions on arrays ---------*- C++ -*-===//
//
// The calling convention of compiled entries, shared by the JIT
// (CompiledFunction) and ahead-of-time executables (gptq-compile): arrays
// become memref descriptors passed through the entry's packed interface
// (`_mlir__mlir_ciface_<entry>`), and returned buffers become arrays. It
// depends on nothing of MLIR, so that executables need no MLIR library.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_EXECUTION_CALL_H
#define GPTQ_EXECUTION_CALL_H

#include "gptq/Support/Npy.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace mlir {
namespace gptq {

/// A dynamic size in an ArgSpec (the value of MLIR's ShapedType::kDynamic).
constexpr int64_t kDynamicSize = std::numeric_limits<int64_t>::min();

/// One argument or result of an entry function.
struct ArgSpec {
  DType dtype;
  /// Sizes; kDynamicSize where dynamic. Empty for scalars.
  std::vector<int64_t> shape;
  /// A scalar (not a tensor or memref); only arguments may be scalars.
  bool scalar = false;
  /// A memref, which the function may write (tensors are read-only).
  bool isMemRef = false;
  std::string describe() const;
};

/// A weight that travels as a hidden trailing argument of an entry.
struct EntryWeight {
  const char *data;
  std::vector<int64_t> shape;
};

/// A compiled entry and what its packed interface takes and returns.
struct PackedEntry {
  std::string name;
  void (*function)(void **) = nullptr;
  std::vector<ArgSpec> inputs, results;
  /// Whether the code allocates through the gptq runtime (results are freed
  /// there) rather than with malloc.
  bool runtimeAllocator = false;
  /// When set, how results are freed instead (compiled GPU code returns
  /// CUDA managed memory: gptq_cuda_free_managed).
  void (*freeResult)(void *) = nullptr;
};

/// Calls `entry` on `args`, checked against its inputs (dtype, rank, static
/// sizes, byte counts), with `weights` after them. Memref arguments, which
/// the code may write, are copied first, unless `writeMemRefsInPlace`: then
/// the code writes the caller's own buffers (a cache that each call
/// updates). A failed run-time check of the code comes back as the error.
/// `names` (optional) label the inputs in diagnostics.
llvm::Expected<std::vector<NpyArray>>
callPackedEntry(const PackedEntry &entry, llvm::ArrayRef<EntryWeight> weights,
                const std::vector<NpyArray> &args,
                const std::vector<std::string> &names = {},
                bool writeMemRefsInPlace = false);

/// Makes `call` `repeat` times (at least once), appending each call's
/// seconds to `seconds`; returns the last call's results, or the first
/// error.
llvm::Expected<std::vector<NpyArray>>
callRepeatedly(unsigned repeat,
               llvm::function_ref<llvm::Expected<std::vector<NpyArray>>()> call,
               std::vector<double> &seconds);

/// Whether `device` names where compiled code can run: "cpu", "cuda" or
/// "cuda-emulated" (the CUDA path's kernels run on the host's cores);
/// the error is the tools' message for --device.
llvm::Error checkDeviceName(llvm::StringRef device);

/// Where result `index` of a call is written: DIR/<index>.npy.
std::string resultPath(llvm::StringRef dir, size_t index);

/// Checks, before a call of `entry`, that its `numResults` results can be
/// written into `dir`: none of them is one of `inputs`, and no numbered
/// file past them is left there by a run of a function with more results,
/// to be mistaken for one of this run's.
llvm::Error checkResultFiles(llvm::StringRef dir, size_t numResults,
                             llvm::ArrayRef<std::string> inputs,
                             llvm::StringRef entry);

/// Writes `results` as DIR/0.npy, DIR/1.npy, ... (the directory created if
/// missing), all of them or none.
llvm::Error writeResults(llvm::StringRef dir, llvm::ArrayRef<NpyArray> results);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_EXECUTION_CALL_H
