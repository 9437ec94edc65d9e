//===- SerializeLoneIterations.cpp - No team for one iteration -----------===//
//
// An omp.parallel whose worksharing loop has at most one iteration runs on
// the calling thread (an `if` clause), without forking a team.
//
//===----------------------------------------------------------------------===//

#include "gptq/Codegen/Common/LinearIterations.h"
#include "WorksharingLoops.h"
#include "gptq/Codegen/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQSERIALIZELONEITERATIONS
#include "gptq/Codegen/CPU/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {
struct GPTQSerializeLoneIterationsPass
    : gptq::impl::GPTQSerializeLoneIterationsBase<
          GPTQSerializeLoneIterationsPass> {
  using Base::Base;
  void runOnOperation() override {
    getOperation()->walk([](omp::ParallelOp parallel) {
      if (parallel.getIfExpr())
        return;
      omp::LoopNestOp nest = gptq::loneLoopNest(parallel);
      if (!nest || !nest.getLoopLowerBounds().front().getType().isIndex())
        return;
      OpBuilder b(parallel);
      Location loc = parallel.getLoc();
      Value trips =
          gptq::iterationCount(b, loc, gptq::tripCounts(b, loc, nest));
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      Value many = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt,
                                         trips, one);
      parallel.getIfExprMutable().assign(many);
    });
  }
};
} // namespace
