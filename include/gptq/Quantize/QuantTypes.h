//===- QuantTypes.h - Quantized weights as upstream quant types -*- C++ -*-===//
//
// A quantized weight (GPTQ's codes, per-(row, group) scales and zeros, and
// g_idx) expressed with the upstream `quant` dialect: an integer constant of
// the codes, `quant.scast` to a per-axis or sub-channel `!quant.uniform`
// tensor and `quant.dcast` to f32, so that any MLIR compiler that knows the
// upstream dialect can consume it. docs/quant-types.md states the
// conventions.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_QUANTIZE_QUANTTYPES_H
#define GPTQ_QUANTIZE_QUANTTYPES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Value.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>

namespace mlir {
namespace gptq {

/// One quantized weight, row-major: `W[r, j] = scales[r, g] * (codes[r, j] -
/// zeros[r, g])` with `g = gIdx[j]`, as `gptq.dequantize` reads it.
struct QuantizedWeight {
  int64_t rows = 0, cols = 0, groups = 0;
  /// Bits per code, 1..8; codes are unsigned.
  int64_t bits = 0;
  ArrayRef<uint8_t> codes;       // rows x cols
  ArrayRef<float> scales, zeros; // rows x groups
  ArrayRef<int32_t> gIdx;        // cols
};

/// Builds the f32 weight `rows x cols` from `weight` with upstream quant ops
/// at `b`'s insertion point. A weight that the types cannot express (a scale
/// that is not positive and finite, a zero point that is not an integer of
/// the storage range, a g_idx entry out of range, an empty weight) gets an
/// error at `loc` naming `layer`, and nothing is built.
FailureOr<Value> buildQuantTypesWeight(OpBuilder &b, Location loc,
                                       StringRef layer,
                                       const QuantizedWeight &weight);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_QUANTIZE_QUANTTYPES_H
