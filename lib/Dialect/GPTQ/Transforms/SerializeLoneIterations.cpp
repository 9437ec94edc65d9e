//===- SerializeLoneIterations.cpp - No team for one iteration -----------===//
//
// An omp.parallel whose worksharing loop has at most one iteration runs on
// the calling thread (an `if` clause), without forking a team.
//
//===----------------------------------------------------------------------===//

#include "gptq/Dialect/GPTQ/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQSERIALIZELONEITERATIONS
#include "gptq/Dialect/GPTQ/Transforms/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {
/// The loop nest of `parallel` when its region is one omp.wsloop around
/// one omp.loop_nest (and the terminator), with every bound defined
/// outside the region; else null.
omp::LoopNestOp loneLoopNest(omp::ParallelOp parallel) {
  Block &body = parallel.getRegion().front();
  if (!parallel.getRegion().hasOneBlock() ||
      body.getOperations().size() != 2)
    return nullptr;
  auto wsloop = dyn_cast<omp::WsloopOp>(body.front());
  if (!wsloop)
    return nullptr;
  auto nest = dyn_cast<omp::LoopNestOp>(wsloop.getWrappedLoop());
  if (!nest)
    return nullptr;
  for (Value bound : nest->getOperands())
    if (parallel->isAncestor(bound.getParentRegion()->getParentOp()))
      return nullptr;
  return nest;
}

struct GPTQSerializeLoneIterationsPass
    : gptq::impl::GPTQSerializeLoneIterationsBase<
          GPTQSerializeLoneIterationsPass> {
  using Base::Base;
  void runOnOperation() override {
    getOperation()->walk([](omp::ParallelOp parallel) {
      if (parallel.getIfExpr())
        return;
      omp::LoopNestOp nest = loneLoopNest(parallel);
      if (!nest || !nest.getLoopLowerBounds().front().getType().isIndex())
        return;
      OpBuilder b(parallel);
      Location loc = parallel.getLoc();
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      Value trips = one;
      for (auto [lower, upper, step] :
           llvm::zip_equal(nest.getLoopLowerBounds(),
                           nest.getLoopUpperBounds(), nest.getLoopSteps())) {
        // An inclusive nest runs to the upper bound itself.
        Value end = upper;
        if (nest.getLoopInclusive())
          end = arith::AddIOp::create(b, loc, upper, one);
        Value span = arith::SubIOp::create(b, loc, end, lower);
        Value count = arith::CeilDivSIOp::create(b, loc, span, step);
        count = arith::MaxSIOp::create(b, loc, count, zero);
        trips = arith::MulIOp::create(b, loc, trips, count);
      }
      Value many = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt,
                                         trips, one);
      parallel.getIfExprMutable().assign(many);
    });
  }
};
} // namespace
