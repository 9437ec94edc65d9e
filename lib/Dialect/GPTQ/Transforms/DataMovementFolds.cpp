//===- DataMovementFolds.cpp - Permutes the big kernels fold in -----------===//

#include "gptq/Dialect/GPTQ/Transforms/DataMovementFolds.h"

using namespace mlir;
using namespace mlir::gptq;

namespace {
/// Whether `op` permutes exactly `dims`, forwards or inverse as asked.
bool permutes(PermuteOp op, ArrayRef<int64_t> dims, bool inverse) {
  return op && static_cast<bool>(op.getInverse()) == inverse &&
         op.getDims() == dims;
}
} // namespace

PermuteOp gptq::findCholeskyPermutation(DampedCholeskyOp op) {
  auto permute = op.getHessian().getDefiningOp<PermuteOp>();
  return permutes(permute, {0, 1}, /*inverse=*/false) ? permute : PermuteOp();
}

QuantizeBlocksFolds gptq::findQuantizeBlocksFolds(QuantizeBlocksOp op) {
  QuantizeBlocksFolds folds;
  folds.weight = op.getWeight();
  folds.permute = folds.weight.getDefiningOp<PermuteOp>();
  if (!permutes(folds.permute, {1}, /*inverse=*/false))
    folds.permute = nullptr;
  if (folds.permute)
    folds.weight = folds.permute.getSource();
  folds.mask = folds.weight.getDefiningOp<MaskDeadInputsOp>();
  if (folds.mask)
    folds.weight = folds.mask.getWeight();
  // The codes' only use puts their columns back in the original order.
  if (folds.permute && op.getCodes().hasOneUse()) {
    folds.unpermute = dyn_cast<PermuteOp>(*op.getCodes().getUsers().begin());
    if (!permutes(folds.unpermute, {1}, /*inverse=*/true) ||
        folds.unpermute.getPerm() != folds.permute.getPerm())
      folds.unpermute = nullptr;
  }
  return folds;
}

void gptq::replaceFoldedCholesky(DampedCholeskyOp op, ValueRange results,
                                 PermuteOp permute) {
  op->replaceAllUsesWith(results);
  op->erase();
  if (permute && permute->use_empty())
    permute->erase();
}

void gptq::replaceFoldedQuantizeBlocks(QuantizeBlocksOp op, ValueRange results,
                                       const QuantizeBlocksFolds &folds) {
  QuantizeBlocksFolds f = folds;
  if (f.unpermute) {
    f.unpermute->replaceAllUsesWith(ValueRange{results[0]});
    f.unpermute->erase();
  }
  op->replaceAllUsesWith(results);
  op->erase();
  if (f.permute && f.permute->use_empty())
    f.permute->erase();
  if (f.mask && f.mask->use_empty())
    f.mask->erase();
}
