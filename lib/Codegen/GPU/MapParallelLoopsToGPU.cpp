//===- MapParallelLoopsToGPU.cpp - Parallel loops to blocks and threads ---===//
//
// The GPU schedule of the parallel loops that linalg and scf.forall become:
// each outermost scf.parallel is tiled into blocks of threads and mapped,
// the loops nested in it run sequentially in each thread. A sequential loop
// marked gptq.one_block runs whole in one block: its parallel loops are
// shared among the block's threads, with barriers between them.
//
//===----------------------------------------------------------------------===//

#include "gptq/Codegen/Common/LinearIterations.h"
#include "gptq/Codegen/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQMAPPARALLELLOOPSTOGPU
#include "gptq/Codegen/GPU/Passes.h.inc"
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

/// The parallel loops in `loop` not nested in another parallel loop, or a
/// reason why `loop` cannot run in one block: every other op in it must be
/// executable by all threads alike (no writes, allocations or calls), and
/// the parallel loops must have no results.
FailureOr<SmallVector<scf::ParallelOp>> blockLoops(scf::ForOp loop,
                                                   std::string &why) {
  if (loop.getNumResults()) {
    why = "results (the block cannot return them to the host)";
    return failure();
  }
  SmallVector<scf::ParallelOp> loops;
  WalkResult result = loop.getBody()->walk<WalkOrder::PreOrder>(
      [&](Operation *op) -> WalkResult {
        if (auto parallel = dyn_cast<scf::ParallelOp>(op)) {
          if (parallel.getNumResults()) {
            why = "a parallel loop with results (a reduction)";
            return WalkResult::interrupt();
          }
          loops.push_back(parallel);
          return WalkResult::skip();
        }
        if (isa<scf::ForOp, scf::IfOp, scf::YieldOp>(op) || isPure(op))
          return WalkResult::advance();
        auto effects = dyn_cast<MemoryEffectOpInterface>(op);
        if (effects && effects.onlyHasEffect<MemoryEffects::Read>())
          return WalkResult::advance();
        why = "'" + op->getName().getStringRef().str() +
              "' outside its parallel loops (only reads and arithmetic can "
              "run in every thread alike)";
        return WalkResult::interrupt();
      });
  if (result.wasInterrupted())
    return failure();
  if (loops.empty()) {
    why = "no parallel loop";
    return failure();
  }
  return loops;
}

/// Replaces `parallel` (in a block of `threads` threads whose id is `tid`)
/// by a loop that gives each thread every `threads`-th iteration of its
/// linearized iteration space (the last dimension fastest), between
/// barriers: one before it, so that no thread writes what another has still
/// to read (unless only pure ops follow the previous barrier), and one after
/// it, so that every thread sees what it wrote.
void distribute(scf::ParallelOp parallel, Value tid, int64_t threads) {
  SmallVector<scf::ParallelOp> nested;
  parallel.getBody()->walk(
      [&](scf::ParallelOp inner) { nested.push_back(inner); });
  for (scf::ParallelOp inner : nested)
    sequentialize(inner);

  OpBuilder b(parallel);
  Location loc = parallel.getLoc();
  // No barrier is needed when only pure ops (index arithmetic, views) lie
  // between the last one and this loop.
  Operation *prev = parallel->getPrevNode();
  while (prev && !isa<gpu::BarrierOp>(prev) && isPure(prev))
    prev = prev->getPrevNode();
  if (!prev || !isa<gpu::BarrierOp>(prev))
    gpu::BarrierOp::create(b, loc);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  SmallVector<Value> trips;
  Value total = arith::ConstantIndexOp::create(b, loc, 1);
  for (auto [lb, ub, step] :
       llvm::zip(parallel.getLowerBound(), parallel.getUpperBound(),
                 parallel.getStep())) {
    Value span = arith::SubIOp::create(b, loc, ub, lb);
    Value trip = arith::CeilDivSIOp::create(b, loc, span, step);
    trip = arith::MaxSIOp::create(b, loc, trip, zero);
    trips.push_back(trip);
    total = arith::MulIOp::create(b, loc, total, trip);
  }
  Value stride = arith::ConstantIndexOp::create(b, loc, threads);
  auto forOp = scf::ForOp::create(b, loc, tid, total, stride);
  b.setInsertionPoint(forOp.getBody()->getTerminator());
  IRMapping mapping;
  mapping.map(parallel.getInductionVars(),
              gptq::delinearizeIterations(b, loc, forOp.getInductionVar(),
                                          trips, parallel.getLowerBound(),
                                          parallel.getStep()));
  for (Operation &op : parallel.getBody()->without_terminator())
    b.clone(op, mapping);
  b.setInsertionPointAfter(forOp);
  gpu::BarrierOp::create(b, loc);
  parallel->erase();
}

/// Runs `loop` in one block of `threads` threads (see blockLoops).
void runInOneBlock(scf::ForOp loop, ArrayRef<scf::ParallelOp> loops,
                   int64_t threads) {
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value count = arith::ConstantIndexOp::create(b, loc, threads);
  auto launch = gpu::LaunchOp::create(b, loc, one, one, one, count, one, one);
  b.setInsertionPointToStart(&launch.getBody().front());
  gpu::TerminatorOp::create(b, loc);
  loop->moveBefore(&launch.getBody().front().back());
  Value tid = launch.getThreadIds().x;
  for (scf::ParallelOp parallel : loops)
    distribute(parallel, tid, threads);
  loop->removeAttr("gptq.one_block");
}

/// Whether each iteration of `loop` runs a loop marked
/// gptq.long_iterations.
bool runsLong(scf::ParallelOp loop) {
  return loop.getBody()
      ->walk([](scf::ForOp inner) {
        return inner->hasAttr("gptq.long_iterations") ? WalkResult::interrupt()
                                                      : WalkResult::advance();
      })
      .wasInterrupted();
}

struct GPTQMapParallelLoopsToGPUPass
    : gptq::impl::GPTQMapParallelLoopsToGPUBase<GPTQMapParallelLoopsToGPUPass> {
  using Base::Base;

  void runOnOperation() override {
    if (threads1D < 1 || threadsX < 1 || threadsY < 1 || threadsLong < 1 ||
        threads1D > 1024 || threadsLong > 1024 || threadsX * threadsY > 1024) {
      getOperation().emitError()
          << "gptq-map-parallel-loops-to-gpu: threads per block must be "
             "between 1 and 1024";
      return signalPassFailure();
    }
    // Loops marked to run in one block first: their parallel loops are the
    // block's, not kernels of their own.
    SmallVector<scf::ForOp> blocks;
    getOperation().walk([&](scf::ForOp loop) {
      if (loop->hasAttr("gptq.one_block") &&
          !loop->getParentOfType<gpu::LaunchOp>() &&
          !loop->getParentOfType<scf::ParallelOp>())
        blocks.push_back(loop);
    });
    for (scf::ForOp loop : blocks) {
      std::string why;
      FailureOr<SmallVector<scf::ParallelOp>> loops = blockLoops(loop, why);
      if (failed(loops)) {
        // Still correct as separate kernels, only slower.
        loop.emitRemark() << "gptq-map-parallel-loops-to-gpu: the loop "
                             "marked gptq.one_block runs as separate "
                             "kernels: it holds "
                          << why;
        loop->removeAttr("gptq.one_block");
        continue;
      }
      runInOneBlock(loop, *loops, threads1D);
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
        tiles[0] = runsLong(loop) ? threadsLong : threads1D;
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
