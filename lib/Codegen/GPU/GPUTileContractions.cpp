//===- GPUTileContractions.cpp - Matrix products as tiled GPU kernels -----===//
//
// A linalg contraction on buffers (two parallel dimensions and one
// reduction: the library's matrix products) becomes a gpu.launch of tiles
// of TR x TR results (one grid z per batch of a batched product), T x T
// threads with R x R results each (registers);
// the reduction runs in chunks of T, each chunk of both operands staged in
// shared memory by the block's threads, so that every element read from
// global memory serves TR products and every one read from shared memory
// R.
//
//===----------------------------------------------------------------------===//

#include "Contraction.h"
#include "SharedMemory.h"
#include "gptq/Codegen/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQGPUTILECONTRACTIONS
#include "gptq/Codegen/GPU/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;
using namespace mlir::gptq;

namespace {

bool inParallelCode(Operation *op) {
  for (Operation *p = op->getParentOp(); p; p = p->getParentOp())
    if (isa<scf::ForallOp, scf::ParallelOp, gpu::LaunchOp>(p))
      return true;
  return false;
}

/// One contraction as a launch of BT x BT results per block (BT = T R),
/// T x T threads with R x R results each in registers, the reduction in
/// chunks of T whose operand tiles the block stages in shared memory.
class CudaCoreProduct {
public:
  CudaCoreProduct(linalg::LinalgOp op, const Contraction &c, int64_t threads,
                  int64_t results)
      : op(op), c(c), b(op), loc(op.getLoc()), T(threads), R(results),
        BT(threads * results),
        element(cast<MemRefType>(op->getOperand(0).getType()).getElementType()),
        reads(operandLoops(op)) {}

  void build() {
    gpu::LaunchOp launch = createLaunch();
    b.setInsertionPointToStart(&launch.getBody().front());
    zero = constant(0);
    bid = launch.getBlockIds();
    tid = launch.getThreadIds();
    placeThreads();
    placeTiles();
    placeResults();
    SmallVector<Value> inits = initialAccumulators();
    linear = arith::AddIOp::create(b, loc, tid.x,
                                   arith::MulIOp::create(b, loc, tid.y, t));
    auto chunks = scf::ForOp::create(b, loc, zero, bounds[c.k], t, inits);
    accumulateChunk(chunks);
    for (int64_t r = 0; r < R * R; ++r) {
      auto store = scf::IfOp::create(b, loc, TypeRange{}, inside[r], false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(store.thenBlock());
      memref::StoreOp::create(b, loc, chunks.getResult(r), op.getDpsInits()[0],
                              indicesOf(2, resultIvs[r]));
    }
    gpu::TerminatorOp::create(b, loc);
    op->erase();
  }

private:
  Value constant(int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  }
  Value ult(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
  }

  /// The launch: a block per BT x BT tile of the result, a grid z per batch,
  /// and the shared memory of two tiles: lhs (m, k), BT x T, and rhs (k,
  /// n), T x BT, each row padded by one element, so that a tile stored
  /// across its rows (an operand given transposed) hits every bank of
  /// shared memory once.
  gpu::LaunchOp createLaunch() {
    bounds = loopBounds(b, loc, op, reads);
    Value m = bounds[c.m], n = bounds[c.n];
    t = constant(T);
    bt = constant(BT);
    Value one = constant(1);
    Value gridX = arith::CeilDivUIOp::create(b, loc, n, bt);
    Value gridY = arith::CeilDivUIOp::create(b, loc, m, bt);
    int64_t bytes = element.getIntOrFloatBitWidth() / 8;
    int64_t lhsBytes = BT * (T + 1) * bytes;
    rhsOffset = (lhsBytes + 15) / 16 * 16;
    int64_t rhsBytes = T * (BT + 1) * bytes;
    Value smem = arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                              rhsOffset + rhsBytes);
    Value gridZ = c.batch ? bounds[*c.batch] : one;
    this->one = one;
    return gpu::LaunchOp::create(b, loc, gridX, gridY, gridZ, t, t, one, smem);
  }

  /// Thread (y, x) owns rows m0 + y + a T and columns n0 + x + b T
  /// (a, b < R): for each (a, b), consecutive threads store consecutive
  /// elements of a row of the result.
  void placeThreads() {
    m0 = arith::MulIOp::create(b, loc, bid.y, bt);
    n0 = arith::MulIOp::create(b, loc, bid.x, bt);
    for (int64_t a = 0; a < R; ++a) {
      Value r = arith::AddIOp::create(
          b, loc, m0, arith::AddIOp::create(b, loc, tid.y, constant(a * T)));
      Value cl = arith::AddIOp::create(
          b, loc, n0, arith::AddIOp::create(b, loc, tid.x, constant(a * T)));
      rows.push_back(r);
      cols.push_back(cl);
      rowIn.push_back(ult(r, bounds[c.m]));
      colIn.push_back(ult(cl, bounds[c.n]));
    }
  }

  void placeTiles() {
    auto workgroup = gptq::workgroupSpace(b.getContext());
    Value shared = gptq::dynamicSharedMemory(b, loc);
    auto lhsType = MemRefType::get({BT, T + 1}, element,
                                   MemRefLayoutAttrInterface(), workgroup);
    auto rhsType = MemRefType::get({T, BT + 1}, element,
                                   MemRefLayoutAttrInterface(), workgroup);
    lhsTile =
        memref::ViewOp::create(b, loc, lhsType, shared, zero, ValueRange{});
    rhsTile = memref::ViewOp::create(b, loc, rhsType, shared,
                                     constant(rhsOffset), ValueRange{});
  }

  /// Loop indices to fill in: zeros, the batch on the grid's z.
  SmallVector<Value> loopIndices() {
    SmallVector<Value> ivs(op.getNumLoops(), zero);
    if (c.batch)
      ivs[*c.batch] = bid.z;
    return ivs;
  }

  /// An operand's indices at loop indices ivs (m, n, k by loop).
  SmallVector<Value> indicesOf(unsigned operand, ArrayRef<Value> ivs) {
    return operandIndices(reads[operand], ivs);
  }

  /// Result (a, b) of the thread: its loop indices, and whether it lies
  /// inside C.
  void placeResults() {
    for (int64_t a = 0; a < R; ++a)
      for (int64_t bb = 0; bb < R; ++bb) {
        SmallVector<Value> ivs = loopIndices();
        ivs[c.m] = rows[a];
        ivs[c.n] = cols[bb];
        resultIvs.push_back(ivs);
        inside.push_back(arith::AndIOp::create(b, loc, rowIn[a], colIn[bb]));
      }
  }

  /// The accumulators start from C (as the op's body receives it); those
  /// outside C start from zero and are never stored. A C that a fill has
  /// just set is not read: the accumulators start from the fill's value,
  /// and the fill goes (one launch fewer).
  SmallVector<Value> initialAccumulators() {
    SmallVector<Value> inits;
    if (linalg::FillOp fill = fillBefore(op)) {
      inits.assign(R * R, fill.getDpsInputs()[0]);
      fill->erase();
      return inits;
    }
    for (int64_t r = 0; r < R * R; ++r) {
      auto init =
          scf::IfOp::create(b, loc, TypeRange{element}, inside[r], true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(init.thenBlock());
      scf::YieldOp::create(b, loc,
                           memref::LoadOp::create(b, loc, op->getOperand(2),
                                                  indicesOf(2, resultIvs[r]))
                               .getResult());
      b.setInsertionPointToStart(init.elseBlock());
      scf::YieldOp::create(
          b, loc,
          arith::ConstantOp::create(b, loc, b.getZeroAttr(element))
              .getResult());
      inits.push_back(init.getResult(0));
    }
    return inits;
  }

  /// A chunk of T of the reduction: both operands' tiles staged (elements
  /// outside the operands not read), then each thread runs the chunk's part
  /// of its sums, in the order of k.
  void accumulateChunk(scf::ForOp chunks) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(chunks.getBody());
    Value k0 = chunks.getInductionVar();
    Value m = bounds[c.m], n = bounds[c.n], k = bounds[c.k];
    SmallVector<Value> ivs = loopIndices();
    stageTile(b, loc, op, reads, ivs, linear, T * T,
              {c.lhs, c.m, c.k, m0, k0, m, k, BT, T, lhsTile},
              /*zeroOutside=*/false);
    stageTile(b, loc, op, reads, ivs, linear, T * T,
              {c.rhs, c.k, c.n, k0, n0, k, n, T, BT, rhsTile},
              /*zeroOutside=*/false);
    gpu::BarrierOp::create(b, loc);
    Value left = arith::SubIOp::create(b, loc, k, k0);
    Value count = arith::MinUIOp::create(b, loc, left, t);
    auto inner = scf::ForOp::create(b, loc, zero, count, one,
                                    chunks.getRegionIterArgs());
    multiplyTiles(inner);
    // The tiles are read by all before the next chunk overwrites them.
    gpu::BarrierOp::create(b, loc);
    scf::YieldOp::create(b, loc, inner.getResults());
  }

  /// One step kk of the chunk: the op's body on each of the thread's R x R
  /// results, with its row's element of the lhs tile and its column's of
  /// the rhs tile.
  void multiplyTiles(scf::ForOp inner) {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(inner.getBody());
    Value kk = inner.getInductionVar();
    SmallVector<Value> as, bs;
    for (int64_t a = 0; a < R; ++a) {
      as.push_back(memref::LoadOp::create(
          b, loc, lhsTile,
          ValueRange{arith::AddIOp::create(b, loc, tid.y, constant(a * T)),
                     kk}));
      bs.push_back(memref::LoadOp::create(
          b, loc, rhsTile,
          ValueRange{kk,
                     arith::AddIOp::create(b, loc, tid.x, constant(a * T))}));
    }
    Block *gbody = op.getBlock();
    SmallVector<Value> next;
    for (int64_t a = 0; a < R; ++a)
      for (int64_t bb = 0; bb < R; ++bb) {
        IRMapping mapping;
        mapping.map(gbody->getArgument(c.lhs), as[a]);
        mapping.map(gbody->getArgument(c.rhs), bs[bb]);
        mapping.map(gbody->getArgument(2),
                    inner.getRegionIterArgs()[a * R + bb]);
        for (Operation &o : gbody->without_terminator())
          b.clone(o, mapping);
        next.push_back(
            mapping.lookupOrDefault(gbody->getTerminator()->getOperand(0)));
      }
    scf::YieldOp::create(b, loc, next);
  }

  linalg::LinalgOp op;
  const Contraction &c;
  OpBuilder b;
  Location loc;
  const int64_t T, R, BT;
  Type element;
  SmallVector<SmallVector<unsigned>> reads;
  SmallVector<Value> bounds;
  int64_t rhsOffset = 0;
  Value t, bt, one, zero, m0, n0, linear, lhsTile, rhsTile;
  gpu::KernelDim3 bid, tid;
  SmallVector<Value> rows, cols, rowIn, colIn, inside;
  SmallVector<SmallVector<Value>> resultIvs;
};

struct GPTQGPUTileContractionsPass
    : gptq::impl::GPTQGPUTileContractionsBase<GPTQGPUTileContractionsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (threads < 1 || threads > 32 || results < 1 || results > 8) {
      getOperation().emitError()
          << "gptq-gpu-tile-contractions: threads must be between 1 and 32 "
             "and results between 1 and 8";
      return signalPassFailure();
    }
    if (tensorCores != "off" && tensorCores != "tf32" &&
        tensorCores != "3xtf32") {
      getOperation().emitError()
          << "gptq-gpu-tile-contractions: tensor-cores must be off, tf32 or "
             "3xtf32, found '"
          << tensorCores << "'";
      return signalPassFailure();
    }
    SmallVector<std::pair<linalg::LinalgOp, Contraction>> work;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (inParallelCode(op))
        return;
      if (auto c = matchContraction(op))
        work.push_back({op, *c});
    });
    for (auto [op, c] : work) {
      std::optional<int> sign;
      if (tensorCores != "off" && cast<MemRefType>(op->getOperand(0).getType())
                                      .getElementType()
                                      .isF32())
        sign = productSign(op, c);
      if (sign)
        buildTensorCoreProduct(op, c, *sign, tensorCores == "3xtf32");
      else
        CudaCoreProduct(op, c, threads, results).build();
    }
  }
};

} // namespace
