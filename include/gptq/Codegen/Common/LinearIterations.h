//===- LinearIterations.h - A loop nest's iterations as one range ---------===//
//
// Passes that run a loop nest's iterations as one linear range (a GPU
// thread's stride, an OpenMP thread's share) and recover each iteration's
// induction variables from its index.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_CODEGEN_COMMON_LINEARITERATIONS_H
#define GPTQ_CODEGEN_COMMON_LINEARITERATIONS_H

#include "mlir/IR/Builders.h"

namespace mlir {
namespace gptq {

/// The induction variables of iteration `linear` of a nest of `counts`
/// iterations in each dimension, the last dimension fastest:
/// `lowerBounds[d] + index_d * steps[d]`, built at `b`'s insertion point.
SmallVector<Value> delinearizeIterations(OpBuilder &b, Location loc,
                                         Value linear, ArrayRef<Value> counts,
                                         ValueRange lowerBounds,
                                         ValueRange steps);

/// The product of `counts` (at least one value).
Value iterationCount(OpBuilder &b, Location loc, ArrayRef<Value> counts);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_CODEGEN_COMMON_LINEARITERATIONS_H
