//===- MemoryEstimate.h - Memory a calibration stage holds ------*- C++ -*-===//
//
// The parts of the memory bound gptq-quantize-model prints before it runs
// (docs/model-quantization.md, "Memory"): the bytes of the tensors of a
// stage's function, the most of them one call holds at once, and the
// workspace of one layer's quantization (and of its output errors).
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_QUANTIZE_MEMORYESTIMATE_H
#define GPTQ_QUANTIZE_MEMORYESTIMATE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Types.h"

#include <cstdint>

namespace mlir {
namespace gptq {

/// The bytes of a ranked tensor of `type`, its dynamic dimensions taken as
/// `lead` (the first) and `extent` (the others: a token window's length);
/// 0 for other types.
uint64_t tensorBytes(Type type, int64_t lead, int64_t extent);

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

#endif // GPTQ_QUANTIZE_MEMORYESTIMATE_H
