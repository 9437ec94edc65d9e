//===- Contraction.h - Matrix products that the GPU schedule tiles -*- C++
//-*-===//
//
// The linalg contractions that gptq-gpu-tile-contractions rewrites, the
// roles of their loops and operands, and what the kernels that replace
// them share.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_LIB_CODEGEN_GPU_CONTRACTION_H
#define GPTQ_LIB_CODEGEN_GPU_CONTRACTION_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>

namespace mlir::gptq {

/// The roles of a contraction's loops and operands: results C[m, n] (or
/// C[n, m]), operands that read (m, k) and (k, n) in either order; with a
/// batch loop, every operand reads it too (C[b, m, n], A[b, m, k], ...).
struct Contraction {
  unsigned m, n, k;              // Loop dimensions.
  std::optional<unsigned> batch; // The batch loop, if any.
  unsigned lhs, rhs; // Input operand numbers: lhs reads (m, k), rhs (k, n).
};

/// The dimensions that `map` reads, if each result is a dimension.
std::optional<SmallVector<unsigned>> dimsOf(AffineMap map);

/// The loops each operand of a matched contraction reads (lhs, rhs,
/// result), in the order of its dimensions.
SmallVector<SmallVector<unsigned>> operandLoops(linalg::LinalgOp op);

/// Each loop's bound: the size (memref.dim) of the first operand that reads
/// it, made at `b`'s insertion point.
SmallVector<Value> loopBounds(OpBuilder &b, Location loc, linalg::LinalgOp op,
                              ArrayRef<SmallVector<unsigned>> reads);

/// An operand's indices at loop indices `ivs`, given the loops it reads.
SmallVector<Value> operandIndices(ArrayRef<unsigned> reads,
                                  ArrayRef<Value> ivs);

/// The roles in `op`, if it is a contraction on buffers of one float type
/// with two parallel loops (three with a batch) and one reduction.
std::optional<Contraction> matchContraction(linalg::LinalgOp op);

/// The linalg.fill that sets all of `op`'s result just before it (only ops
/// without memory effects between), whose value the product can start
/// from instead of reading C: the fill is then dead, since the tiled
/// kernel stores every element of C. None where an operand may be a view
/// of the result's buffer (its elements would be the fill's).
linalg::FillOp fillBefore(linalg::LinalgOp op);

/// +1 or -1 where the body of `op` is acc + lhs * rhs or acc - lhs * rhs
/// (the product in either order): the reduction is then a sum that a
/// matrix unit may form before it meets the accumulator.
std::optional<int> productSign(linalg::LinalgOp op, const Contraction &c);

/// A tile of a contraction's input in shared memory: buffer[i][j] = the
/// operand at the loop indices where `outerDim` is outer0 + i and
/// `innerDim` is inner0 + j (the other loops as the caller gives them),
/// for i < rows and j < cols, where those lie inside the operand
/// (outerSize, innerSize).
struct OperandTile {
  unsigned operand, outerDim, innerDim;
  Value outer0, inner0, outerSize, innerSize;
  int64_t rows, cols;
  Value buffer;
};

/// The copy of `tile` by a block of `threads` threads, thread `linear`
/// taking elements linear + s threads: consecutive threads take consecutive
/// elements of the operand's rows (along j when the operand's last index
/// is `innerDim`, along i otherwise). Elements outside the operand are not
/// read; with `zeroOutside` their entries are set to zero, otherwise left
/// as they are. `reads` holds the loops each operand reads, `ivs` the loop
/// indices of the loops other than the tile's.
void stageTile(OpBuilder &b, Location loc, linalg::LinalgOp op,
               ArrayRef<SmallVector<unsigned>> reads, ArrayRef<Value> ivs,
               Value linear, int64_t threads, const OperandTile &tile,
               bool zeroOutside);

/// Replaces `op` (a contraction of f32 operands whose body is acc + sign *
/// lhs * rhs) with a gpu.launch that forms the products on tensor cores
/// (nvgpu.mma.sync, TF32 operands; with `split`, three products per
/// multiply, 3xTF32) and adds them to C (or to a fill's value, whose fill
/// it removes).
void buildTensorCoreProduct(linalg::LinalgOp op, const Contraction &c, int sign,
                            bool split);

} // namespace mlir::gptq

#endif // GPTQ_LIB_CODEGEN_GPU_CONTRACTION_H
