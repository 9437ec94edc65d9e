//===- WorksharingLoops.h - OpenMP loops as convert-scf-to-openmp writes --===//
//
// The shape of the OpenMP regions that convert-scf-to-openmp makes of an
// scf.parallel, shared by the passes that rewrite them.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_LIB_CODEGEN_CPU_WORKSHARINGLOOPS_H
#define GPTQ_LIB_CODEGEN_CPU_WORKSHARINGLOOPS_H

#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace gptq {

/// The loop nest of `parallel` when its region is one omp.wsloop around
/// one omp.loop_nest (and the terminator), with every bound defined
/// outside the region; else null.
omp::LoopNestOp loneLoopNest(omp::ParallelOp parallel);

/// The iterations of each dimension of `nest` (an inclusive nest runs to
/// its upper bounds; none below zero), as index values built at `b`'s
/// insertion point.
SmallVector<Value> tripCounts(OpBuilder &b, Location loc, omp::LoopNestOp nest);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_LIB_CODEGEN_CPU_WORKSHARINGLOOPS_H
