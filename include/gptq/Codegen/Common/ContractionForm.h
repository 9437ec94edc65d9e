//===- ContractionForm.h - The normal form of contractions ------*- C++ -*-===//
//
// The form gptq-normalize-contractions writes and the per-target schedules
// (gptq-matmul-to-kernel) read: linalg.batch_matmul over loops (b, m, n, k)
// = (d0, d1, d2, d3) with A [B, M, K] or [B, K, M], B [B, K, N] or
// [B, N, K], C [B, M, N].
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_CODEGEN_COMMON_CONTRACTIONFORM_H
#define GPTQ_CODEGEN_COMMON_CONTRACTIONFORM_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir {
namespace gptq {

/// Unit attributes of the normal form that a causal mask justifies (see
/// gptq-normalize-contractions): only the elements C[b, m, n] with n <= m
/// of the result are read, or A[b, m, k] is zero wherever k > m.
inline constexpr llvm::StringLiteral kLowerResultAttr = "gptq.lower_result";
inline constexpr llvm::StringLiteral kLowerLhsAttr = "gptq.lower_lhs";

/// A map of the normal form's loops (b, m, n, k) to `dims`.
inline AffineMap batchMatmulMap(MLIRContext *ctx, ArrayRef<unsigned> dims) {
  SmallVector<AffineExpr> results;
  for (unsigned d : dims)
    results.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(4, 0, results, ctx);
}

/// The maps of the normal form with A and B as given.
inline SmallVector<AffineMap> batchMatmulMaps(MLIRContext *ctx, bool transA,
                                              bool transB) {
  return {batchMatmulMap(ctx, transA ? ArrayRef<unsigned>{0, 3, 1}
                                     : ArrayRef<unsigned>{0, 1, 3}),
          batchMatmulMap(ctx, transB ? ArrayRef<unsigned>{0, 2, 3}
                                     : ArrayRef<unsigned>{0, 3, 2}),
          batchMatmulMap(ctx, {0, 1, 2})};
}

/// Whether `op` is in the normal form; sets whether A is [B, K, M] and B is
/// [B, N, K].
inline bool isNormalBatchMatmul(linalg::BatchMatmulOp op, bool &transA,
                                bool &transB) {
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  for (bool a : {false, true})
    for (bool b : {false, true})
      if (maps == batchMatmulMaps(op.getContext(), a, b)) {
        transA = a;
        transB = b;
        return true;
      }
  return false;
}

} // namespace gptq
} // namespace mlir

#endif // GPTQ_CODEGEN_COMMON_CONTRACTIONFORM_H
