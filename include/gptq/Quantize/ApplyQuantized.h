//===- ApplyQuantized.h - Quantized weights into a model -----------*- C++
//-*-===//
//
// The IR side of the end of gptq-quantize-model: each quantized layer's
// weight use replaced by its quantized form (packed codes with gptq.unpack
// and gptq.dequantize, upstream quant types, or the dequantized float
// weight), from data the caller holds; nothing here quantizes, compiles or
// writes files.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_QUANTIZE_APPLYQUANTIZED_H
#define GPTQ_QUANTIZE_APPLYQUANTIZED_H

#include "gptq/Quantize/LinearLayers.h"
#include "gptq/Quantize/QuantTypes.h"
#include "gptq/Support/Npy.h"

#include "mlir/IR/BuiltinOps.h"

#include <memory>

namespace mlir {
namespace gptq {

/// How the quantized weights are written (gptq-quantize-model's format=).
enum class WeightForm {
  /// Packed codes, scales, zeros and g_idx as `dense_resource` constants
  /// named `<layer>.qweight`, `.scales`, `.zeros`, `.g_idx`, with
  /// gptq.unpack and gptq.dequantize in front of the contraction. A g_idx
  /// out of order (act-order's) may come with its columns sorted by group
  /// (sortColumnsByGroup) and the permutation `<layer>.perm`: the
  /// contraction reads its activation through gptq.permute by it.
  Packed,
  /// The dequantized weight as a constant `<layer>.dequantized`.
  Float,
  /// Upstream quant types (buildQuantTypesWeight).
  Quant,
};

/// One quantized layer's data, for its form: the bytes are read in place
/// (Packed; `keep` in applyQuantizedWeights holds them) or copied (Float).
struct AppliedWeight {
  const LinearLayer *layer = nullptr;
  /// Float: float32, in the layout the model stores the weight (the type of
  /// its use).
  ArrayRef<char> dequantized;
  /// Quant: the codes and grids.
  QuantizedWeight quantized;
  /// Packed: int32 out x words, float32 out x groups (twice), int32 in;
  /// and int64 in, the permutation of the columns when they were sorted by
  /// group (empty when not).
  ArrayRef<char> qweight, scales, zeros, gIdx, perm;
  int64_t words = 0, groups = 0;
};

/// For a g_idx out of order (act-order's, int32 cols): the permutation
/// (int64 cols) that sorts the columns by group, keeping the order of
/// columns within a group, with `codes` (one byte per code, rows x cols)
/// and `gIdx` permuted by it: column j of the result is column perm[j] of
/// the argument, and each group's columns are contiguous, so that a
/// decode step's kernel reads the weight group by group. An empty array
/// when g_idx is already in order (nothing is changed).
NpyArray sortColumnsByGroup(NpyArray &codes, NpyArray &gIdx);

/// Whether a decode step's rows kernels (KernelsCPU.mlir's __gptq_matmul)
/// read a weight of `bits` bits in groups of `groupSize` columns when its
/// groups are runs in column order: 4 bits and groups of a multiple of 16,
/// 2 to 7 bits and of 32, 8 bits and of 64. Where they do, act-order layers
/// are stored sorted by group (sortColumnsByGroup).
bool rowsKernelReadsGroups(int64_t bits, int64_t groupSize);

/// Replaces the use of each layer's weight (getWeightSourceUse, found for
/// all layers before any is replaced) by its quantized form `form` of
/// `bits` bits, transposed back where the model reads it transposed; then
/// erases the weights' sources that nothing reads any more (a widening and
/// its constant, an ml_program global). Packed blobs keep `keep` alive.
/// Fails (with an error at the layer) only for a weight that the quant
/// types cannot express.
LogicalResult applyQuantizedWeights(ModuleOp module,
                                    ArrayRef<AppliedWeight> weights,
                                    WeightForm form, int64_t bits,
                                    std::shared_ptr<const void> keep);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_QUANTIZE_APPLYQUANTIZED_H
