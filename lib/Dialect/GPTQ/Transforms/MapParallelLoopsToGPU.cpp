//===- MapParallelLoopsToGPU.cpp - Parallel loops to blocks and threads ---===//
//
// The GPU schedule of the parallel loops that linalg and scf.forall become:
// each outermost scf.parallel is tiled into blocks of threads and mapped,
// the loops nested in it run sequentially in each thread.
//
//===----------------------------------------------------------------------===//

#include "gptq/Dialect/GPTQ/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQMAPPARALLELLOOPSTOGPU
#include "gptq/Dialect/GPTQ/Transforms/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {

/// Replaces `loop` (without results) by a nest of scf.for over its
/// dimensions, outermost first, with the same body.
void sequentialize(scf::ParallelOp loop) {
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  IRMapping mapping;
  for (auto [iv, lb, ub, step] :
       llvm::zip(loop.getInductionVars(), loop.getLowerBound(),
                 loop.getUpperBound(), loop.getStep())) {
    auto forOp = scf::ForOp::create(b, loc, lb, ub, step);
    mapping.map(iv, forOp.getInductionVar());
    b.setInsertionPoint(forOp.getBody()->getTerminator());
  }
  for (Operation &op : loop.getBody()->without_terminator())
    b.clone(op, mapping);
  loop->erase();
}

/// Maps the dimensions of `loop` to `first`, `first + 1`, `first + 2`
/// (x, y, z of blocks or threads) from the last dimension backwards, the
/// others to sequential loops.
LogicalResult mapDimensions(scf::ParallelOp loop, gpu::Processor x,
                            gpu::Processor y, gpu::Processor z) {
  MLIRContext *ctx = loop.getContext();
  unsigned rank = loop.getNumLoops();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(1, ctx);
  SmallVector<gpu::ParallelLoopDimMappingAttr> dims;
  for (unsigned d = 0; d < rank; ++d) {
    unsigned fromLast = rank - 1 - d;
    gpu::Processor p = fromLast == 0   ? x
                       : fromLast == 1 ? y
                       : fromLast == 2 ? z
                                       : gpu::Processor::Sequential;
    dims.push_back(
        gpu::ParallelLoopDimMappingAttr::get(ctx, p, identity, identity));
  }
  return gpu::setMappingAttr(loop, dims);
}

struct GPTQMapParallelLoopsToGPUPass
    : gptq::impl::GPTQMapParallelLoopsToGPUBase<GPTQMapParallelLoopsToGPUPass> {
  using Base::Base;

  void runOnOperation() override {
    if (threads1D < 1 || threadsX < 1 || threadsY < 1 ||
        threads1D > 1024 || threadsX * threadsY > 1024) {
      getOperation().emitError()
          << "gptq-map-parallel-loops-to-gpu: threads per block must be "
             "between 1 and 1024";
      return signalPassFailure();
    }
    SmallVector<scf::ParallelOp> outermost;
    getOperation().walk([&](scf::ParallelOp loop) {
      if (loop->getParentOfType<scf::ParallelOp>() ||
          loop->getParentOfType<gpu::LaunchOp>() ||
          loop->hasAttr(gpu::getMappingAttrName()) || loop.getNumResults())
        return;
      outermost.push_back(loop);
    });
    for (scf::ParallelOp loop : outermost) {
      // Post-order: inner loops first, so each one sequentialized has no
      // parallel loop left inside.
      SmallVector<scf::ParallelOp> nested;
      loop.getBody()->walk(
          [&](scf::ParallelOp inner) { nested.push_back(inner); });
      bool reduces = llvm::any_of(
          nested, [](scf::ParallelOp inner) { return inner.getNumResults(); });
      if (reduces)
        continue;
      for (scf::ParallelOp inner : nested)
        sequentialize(inner);

      unsigned rank = loop.getNumLoops();
      SmallVector<int64_t> tiles(rank, 1);
      if (rank == 1) {
        tiles[0] = threads1D;
      } else {
        tiles[rank - 1] = threadsX;
        tiles[rank - 2] = threadsY;
      }
      auto [grid, block] =
          scf::tileParallelLoop(loop, tiles, /*noMinMaxBounds=*/true);
      if (failed(mapDimensions(grid, gpu::Processor::BlockX,
                               gpu::Processor::BlockY,
                               gpu::Processor::BlockZ)) ||
          failed(mapDimensions(block, gpu::Processor::ThreadX,
                               gpu::Processor::ThreadY,
                               gpu::Processor::ThreadZ)))
        return signalPassFailure();
    }
  }
};

} // namespace
