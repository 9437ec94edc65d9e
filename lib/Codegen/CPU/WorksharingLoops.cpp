//===- WorksharingLoops.cpp - OpenMP loops as convert-scf-to-openmp writes ===//

#include "WorksharingLoops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;

omp::LoopNestOp gptq::loneLoopNest(omp::ParallelOp parallel) {
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

SmallVector<Value> gptq::tripCounts(OpBuilder &b, Location loc,
                                    omp::LoopNestOp nest) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  SmallVector<Value> counts;
  for (auto [lower, upper, step] :
       llvm::zip_equal(nest.getLoopLowerBounds(), nest.getLoopUpperBounds(),
                       nest.getLoopSteps())) {
    Value end = upper;
    if (nest.getLoopInclusive())
      end = arith::AddIOp::create(b, loc, upper, one);
    Value span = arith::SubIOp::create(b, loc, end, lower);
    Value count = arith::CeilDivSIOp::create(b, loc, span, step);
    counts.push_back(arith::MaxSIOp::create(b, loc, count, zero));
  }
  return counts;
}
