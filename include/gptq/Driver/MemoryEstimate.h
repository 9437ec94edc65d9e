//===- MemoryEstimate.h - Memory a calibration stage holds ------*- C++ -*-===//
//
// The parts of the memory bound gptq-quantize-model prints before it runs
// (docs/model-quantization.md, "Memory"): the bytes of the tensors of a
// stage's function, the most of them one call holds at once, and the
// workspace of one layer's quantization (and of its output errors).
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_DRIVER_MEMORYESTIMATE_H
#define GPTQ_DRIVER_MEMORYESTIMATE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Types.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>

#include <cstdint>

namespace mlir {
namespace gptq {

/// The bytes of a ranked tensor of `type`, its dynamic dimensions taken as
/// `lead` (the first) and `extent` (the others: a token window's length);
/// 0 for other types.
uint64_t tensorBytes(Type type, int64_t lead, int64_t extent);

/// The sizes of the dynamic dimensions of an entry function's tensors, for
/// a call on `lead` samples of `extent` tokens: the arguments' first
/// dimension is `lead`, their others `extent`, and the sizes that index
/// arithmetic, empty tensors, slices, reshapes and destination-style ops
/// make of them follow (a token matrix `[lead * extent, d]`, a dispatch's
/// `[lead * extent * k, d]`). A size read from data (the rows a dispatch
/// gives one expert) is the share of its matrix's rows that each of the
/// matrix's dispatch slices gets on average. Sizes it cannot follow are
/// `lead` for a first dimension and `extent` for the others, as
/// tensorBytes takes them.
class EntryShapes {
public:
  EntryShapes(func::FuncOp entry, int64_t lead, int64_t extent);
  /// The bytes of `value`, a tensor of the entry (0 for other values).
  uint64_t bytes(Value value);

private:
  std::optional<int64_t> dim(Value tensor, unsigned index);
  std::optional<int64_t> index(Value value);
  int64_t lead, extent;
  /// Of each dispatch matrix, its slices; of each slice's size (read from
  /// data), the matrix.
  llvm::DenseMap<Value, int64_t> slicesOf;
  llvm::DenseMap<Value, Value> shareOf;
  llvm::DenseMap<std::pair<Value, unsigned>, std::optional<int64_t>> dims;
  llvm::DenseMap<Value, std::optional<int64_t>> indices;
  unsigned depth = 0;
};

/// The most bytes of tensors one call of `fn` holds at once, beyond its
/// arguments: each op's results from the op to their last reader, a
/// destination-style op's result in place of a destination it is the last
/// reader of, views (slices, reshapes, casts) taking no bytes of their own
/// but keeping their source. Results of gptq.hessian_accumulate are the
/// Hessians, which the pass counts apart, and are left out.
uint64_t peakIntermediateBytes(func::FuncOp fn, int64_t lead, int64_t extent);

/// The workspace gptq.quantize_layer takes beyond its weight and Hessian
/// (which move in) and its dequantized result: the inverse Hessian's
/// factor, the working copy of the weight and the codes.
uint64_t quantizerWorkspaceBytes(int64_t out, int64_t in);

/// What layer-errors adds to it: the copies of the weight and the Hessian
/// that the pass keeps while the quantizer takes its own, round to
/// nearest's codes and dequantized weight, and one band of the output
/// error's W - Q and (W - Q) H (at most `bandBytes` each).
uint64_t layerErrorBytes(int64_t out, int64_t in, uint64_t bandBytes);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_DRIVER_MEMORYESTIMATE_H
