//===- DataMovementFolds.h - Permutes the big kernels fold in ---*- C++ -*-===//
//
// The data movement around GPTQ's two big consumers that their kernels do
// in passes they make anyway: a symmetric gptq.permute of the Hessian in
// the factorization's reversal pass, and the column permutation (and
// dead-input mask) of W and the inverse permutation of the codes in
// quantize-and-compensate's transposes. Both lowerings of the ops (to the
// library's calls in GPTQToLinalg, to the microkernel ops in the CPU
// schedule) find the folds here, so they fold the same.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_DIALECT_GPTQ_TRANSFORMS_DATAMOVEMENTFOLDS_H
#define GPTQ_DIALECT_GPTQ_TRANSFORMS_DATAMOVEMENTFOLDS_H

#include "gptq/Dialect/GPTQ/IR/GPTQ.h"

namespace mlir {
namespace gptq {

/// The symmetric permutation of the Hessian that `op` factors, when it
/// factors the result of one (gptq.permute of dims 0 and 1, not inverse);
/// null otherwise.
PermuteOp findCholeskyPermutation(DampedCholeskyOp op);

/// Replaces the damped_cholesky `op` by `results`, those of a kernel that
/// factors the source of `permute` (when not null) with its permutation;
/// `permute` goes when nothing else uses it.
void replaceFoldedCholesky(DampedCholeskyOp op, ValueRange results,
                           PermuteOp permute);

/// What a gptq.quantize_blocks folds in (nothing but the op's own weight
/// when built as `QuantizeBlocksFolds{op.getWeight()}`).
struct QuantizeBlocksFolds {
  /// The weight the kernel reads: the op's, or the source of the folded
  /// permutation and mask.
  Value weight;
  /// The column permutation of the weight (dims = [1], not inverse).
  PermuteOp permute;
  /// The dead-input mask applied before it.
  MaskDeadInputsOp mask;
  /// The inverse permutation of the codes, their only use.
  PermuteOp unpermute;
  /// Whether anything folds.
  bool any() const { return permute || mask; }
  /// The permutation the kernel applies to W's columns, or null.
  Value perm() const {
    PermuteOp p = permute;
    return p ? p.getPerm() : Value();
  }
  /// The Hessian whose dead inputs the kernel masks in W, or null.
  Value maskHessian() const {
    MaskDeadInputsOp m = mask;
    return m ? m.getHessian() : Value();
  }
};

/// The folds of `op`.
QuantizeBlocksFolds findQuantizeBlocksFolds(QuantizeBlocksOp op);

/// Replaces the quantize_blocks `op` by `results` (codes, scales, zeros,
/// loss) of a kernel that folds `folds` in: the codes also replace the
/// folded unpermutation's result; the folded ops left without uses go.
void replaceFoldedQuantizeBlocks(QuantizeBlocksOp op, ValueRange results,
                                 const QuantizeBlocksFolds &folds);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_DIALECT_GPTQ_TRANSFORMS_DATAMOVEMENTFOLDS_H
