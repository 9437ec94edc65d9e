//===- ParallelizeLinalg.cpp - Linalg ops to parallel loops ---------------===//
//
// Linalg ops on buffers outside parallel regions become an scf.parallel over
// their parallel loops; reductions run inside as scf.for loops that carry
// the accumulators in registers (loaded once, stored once), so that LLVM
// sees plain loop-carried values it can keep in registers and vectorize.
//
//===----------------------------------------------------------------------===//

#include "gptq/Codegen/CPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQPARALLELIZELINALG
#include "gptq/Codegen/CPU/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {
bool inParallelRegion(Operation *op) {
  for (Operation *p = op->getParentOp(); p; p = p->getParentOp())
    if (isa<scf::ForallOp, scf::ParallelOp>(p) ||
        isa_and_nonnull<omp::OpenMPDialect>(p->getDialect()))
      return true;
  return false;
}

/// The indices an operand's map gives for the loop indices `ivs`.
SmallVector<Value> indicesOf(OpBuilder &b, Location loc, AffineMap map,
                             ValueRange ivs) {
  SmallVector<Value> indices;
  for (AffineExpr e : map.getResults()) {
    if (auto d = dyn_cast<AffineDimExpr>(e)) {
      indices.push_back(ivs[d.getPosition()]);
      continue;
    }
    indices.push_back(affine::makeComposedAffineApply(
                          b, loc, AffineMap::get(map.getNumDims(), 0, e),
                          getAsOpFoldResult(ivs))
                          .getResult());
  }
  return indices;
}

/// Clones the body of `op` for the loop indices `ivs` on `args` (the
/// operands' elements) and returns the yielded values.
SmallVector<Value> cloneBody(OpBuilder &b, linalg::LinalgOp op, ValueRange args,
                             ValueRange ivs) {
  Block *body = op.getBlock();
  IRMapping map;
  map.map(body->getArguments(), args);
  for (Operation &inner : body->without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
      map.map(index.getResult(), ivs[index.getDim()]);
      continue;
    }
    b.clone(inner, map);
  }
  SmallVector<Value> yielded;
  for (Value v : body->getTerminator()->getOperands())
    yielded.push_back(map.lookupOrDefault(v));
  return yielded;
}

/// Whether `op` has its parallel loops first, reductions after them, and
/// outputs indexed by the parallel loops only (permutations of them).
bool hasOuterParallelLoops(linalg::LinalgOp op) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  bool seenReduction = false;
  for (utils::IteratorType t : iterators) {
    if (t == utils::IteratorType::reduction)
      seenReduction = true;
    else if (seenReduction)
      return false;
  }
  for (OpOperand &init : op.getDpsInitsMutable()) {
    AffineMap map = op.getMatchingIndexingMap(&init);
    for (AffineExpr e : map.getResults()) {
      auto d = dyn_cast<AffineDimExpr>(e);
      if (!d || iterators[d.getPosition()] != utils::IteratorType::parallel)
        return false;
    }
  }
  return op.getNumDpsInits() > 0;
}

/// Lowers `op` to an scf.parallel over its parallel loops around scf.for
/// loops over its reductions, whose accumulators are loop-carried values.
void lowerWithRegisterAccumulators(IRRewriter &b, linalg::LinalgOp op) {
  Location loc = op.getLoc();
  SmallVector<Range> ranges = op.createLoopRanges(b, loc);
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  unsigned numParallel = llvm::count(iterators, utils::IteratorType::parallel);
  SmallVector<Value> lbs, ubs, steps;
  for (Range r : ranges) {
    lbs.push_back(getValueOrCreateConstantIndexOp(b, loc, r.offset));
    ubs.push_back(getValueOrCreateConstantIndexOp(b, loc, r.size));
    steps.push_back(getValueOrCreateConstantIndexOp(b, loc, r.stride));
  }

  auto buildInner = [&](OpBuilder &nb, Location nloc, ValueRange parallelIvs) {
    // Accumulators: each output's element, loaded once.
    SmallVector<Value> accs;
    SmallVector<SmallVector<Value>> outIndices;
    for (OpOperand &init : op.getDpsInitsMutable()) {
      // Output maps are permutations of the parallel loops, which come
      // first (hasOuterParallelLoops).
      SmallVector<Value> idx =
          indicesOf(nb, nloc, op.getMatchingIndexingMap(&init), parallelIvs);
      outIndices.push_back(idx);
      accs.push_back(memref::LoadOp::create(nb, nloc, init.get(), idx));
    }
    auto elementArgs = [&](OpBuilder &ib, Location iloc, ValueRange ivs,
                           ValueRange current) {
      SmallVector<Value> args;
      for (OpOperand *input : op.getDpsInputOperands()) {
        if (!isa<MemRefType>(input->get().getType())) {
          args.push_back(input->get());
          continue;
        }
        SmallVector<Value> idx =
            indicesOf(ib, iloc, op.getMatchingIndexingMap(input), ivs);
        args.push_back(memref::LoadOp::create(ib, iloc, input->get(), idx));
      }
      args.append(current.begin(), current.end());
      return args;
    };
    SmallVector<Value> results;
    if (numParallel == iterators.size()) {
      SmallVector<Value> args = elementArgs(nb, nloc, parallelIvs, accs);
      results = cloneBody(nb, op, args, parallelIvs);
    } else {
      // Nested scf.for over the reductions, innermost last.
      std::function<SmallVector<Value>(OpBuilder &, unsigned,
                                       SmallVector<Value>, ValueRange)>
          nest = [&](OpBuilder &fb, unsigned loop, SmallVector<Value> ivs,
                     ValueRange current) -> SmallVector<Value> {
        if (loop == iterators.size()) {
          SmallVector<Value> args = elementArgs(fb, loc, ivs, current);
          return cloneBody(fb, op, args, ivs);
        }
        auto forOp = scf::ForOp::create(
            fb, loc, lbs[loop], ubs[loop], steps[loop], current,
            [&](OpBuilder &bb, Location, Value iv, ValueRange iterArgs) {
              SmallVector<Value> inner = ivs;
              inner.push_back(iv);
              scf::YieldOp::create(bb, loc,
                                   nest(bb, loop + 1, inner, iterArgs));
            });
        return SmallVector<Value>(forOp.getResults());
      };
      SmallVector<Value> ivs(parallelIvs.begin(), parallelIvs.end());
      results = nest(nb, numParallel, ivs, accs);
    }
    for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable()))
      memref::StoreOp::create(nb, nloc, results[i], init.get(), outIndices[i]);
  };

  // The innermost parallel loop stays sequential when there are outer
  // ones: it runs along contiguous memory, and LLVM vectorizes it only as a
  // loop of its own (threads share a collapsed loop by division of one
  // index, which a vectorized row must not pay per element).
  // A short innermost loop (rotary embedding's pairs) is not worth
  // vectorizing alone: loops join it, outermost last, until the sequential
  // ones span at least 16 elements, so that LLVM unrolls the short one and
  // vectorizes the loop around it.
  unsigned numThreaded = numParallel > 1 ? numParallel - 1 : numParallel;
  SmallVector<int64_t> extents = op.getStaticLoopRanges();
  int64_t span = numThreaded < numParallel ? extents[numThreaded] : 0;
  while (numThreaded > 1 && !ShapedType::isDynamic(span) && span < 16) {
    --numThreaded;
    span = ShapedType::isDynamic(extents[numThreaded])
               ? ShapedType::kDynamic
               : span * extents[numThreaded];
  }
  std::function<void(OpBuilder &, unsigned, SmallVector<Value>)> sequential =
      [&](OpBuilder &sb, unsigned loop, SmallVector<Value> ivs) {
        if (loop == numParallel) {
          buildInner(sb, loc, ivs);
          return;
        }
        scf::ForOp::create(sb, loc, lbs[loop], ubs[loop], steps[loop],
                           ValueRange{},
                           [&](OpBuilder &bb, Location, Value iv, ValueRange) {
                             SmallVector<Value> inner = ivs;
                             inner.push_back(iv);
                             sequential(bb, loop + 1, inner);
                             scf::YieldOp::create(bb, loc);
                           });
      };
  if (numThreaded == 0) {
    sequential(b, 0, {});
    return;
  }
  scf::ParallelOp::create(b, loc, ArrayRef<Value>(lbs).take_front(numThreaded),
                          ArrayRef<Value>(ubs).take_front(numThreaded),
                          ArrayRef<Value>(steps).take_front(numThreaded),
                          [&](OpBuilder &nb, Location nloc, ValueRange ivs) {
                            sequential(nb, numThreaded,
                                       SmallVector<Value>(ivs));
                          });
}

struct GPTQParallelizeLinalgPass
    : gptq::impl::GPTQParallelizeLinalgBase<GPTQParallelizeLinalgPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> ops;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (op.hasPureBufferSemantics() && !inParallelRegion(op))
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops) {
      rewriter.setInsertionPoint(op);
      if (hasOuterParallelLoops(op)) {
        lowerWithRegisterAccumulators(rewriter, op);
      } else if (failed(linalg::linalgOpToParallelLoops(rewriter, op))) {
        op->emitOpError("could not be lowered to parallel loops");
        return signalPassFailure();
      }
      rewriter.eraseOp(op);
    }
  }
};
} // namespace
