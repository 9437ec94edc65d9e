//===- TensorCoreProducts.cpp - Matrix products on tensor cores -----------===//
//
// A contraction whose body is acc +- lhs * rhs as a gpu.launch of warps
// that multiply with nvgpu.mma.sync (m16n8k8, TF32 operands, FP32
// accumulators). Blocks of 4 warps compute 64 x 64 results, each warp
// 32 x 32 (2 x 4 tiles of 16 x 8); the reduction runs in chunks of 16,
// both operands' tiles staged in dynamic shared memory with zeros outside
// the operands, so that every fragment is read from shared memory without
// bank conflicts. With three products per multiply (3xTF32), each operand
// is split as x = hi + lo with hi and lo both TF32 (hi = x rounded to 10
// bits of fraction, lo = x - hi rounded again): lo hi + hi lo + hi hi,
// small terms first, keeps the products' error near FP32's; with one
// (TF32), x is rounded once.
//
//===----------------------------------------------------------------------===//

#include "Contraction.h"
#include "SharedMemory.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::gptq;

namespace {

// The block's tile (BM x BN results, BK of the reduction per chunk), the
// warps' grid in it (WR x WC warps of 32 x 32 results), and the rows of the
// shared tiles padded so that a warp's fragment reads meet no bank
// conflict: lane (g, t) reads row g, column t of the lhs tile (a stride of
// BK + 4 floats puts the 32 lanes on 32 banks) and row t, column g of the
// rhs tile (a stride of BN + 8).
constexpr int64_t BM = 64, BN = 64, BK = 16, WR = 2, WC = 2;
constexpr int64_t Warps = WR * WC, Threads = 32 * Warps;
constexpr int64_t LhsStride = BK + 4, RhsStride = BN + 8;
constexpr int64_t MTiles = 2, NTiles = 4; // Of 16 x 8, per warp.

/// The kernel of one contraction, built in the launch's body.
class TensorCoreKernel {
public:
  TensorCoreKernel(linalg::LinalgOp op, const Contraction &c, int sign,
                   bool split)
      : op(op), c(c), sign(sign), split(split), b(op), loc(op.getLoc()),
        f32(b.getF32Type()) {}

  void build() {
    reads = operandLoops(op);
    bounds = loopBounds(b, loc, op, reads);
    // A fill of C just before the op: the results start from its value.
    linalg::FillOp fill = fillBefore(op);
    createLaunch();
    scf::ForOp chunks = multiply();
    Value fillValue = fill ? fill.getDpsInputs()[0] : Value();
    if (fill)
      fill->erase();
    store(chunks, fillValue);
    gpu::TerminatorOp::create(b, loc);
    op->erase();
  }

private:
  linalg::LinalgOp op;
  const Contraction &c;
  int sign;
  bool split;
  OpBuilder b;
  Location loc;
  Type f32;
  SmallVector<SmallVector<unsigned>> reads; // The loops each operand reads.
  SmallVector<Value> bounds;                // Each loop's size.
  gpu::LaunchOp launch;
  Value zero, m0, n0, linear, g, t, warpRow, warpCol, lhsTile, rhsTile;

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value add(Value x, int64_t y) { return add(x, index(y)); }
  Value mul(Value x, int64_t y) {
    return arith::MulIOp::create(b, loc, x, index(y));
  }
  Value ult(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
  }
  Value i32(int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
  }

  /// `x` rounded to TF32 (10 bits of fraction, to nearest, ties away from
  /// zero), as an f32.
  Value toTF32(Value x) {
    Value bits = arith::BitcastOp::create(b, loc, b.getI32Type(), x);
    Value up = arith::AddIOp::create(b, loc, bits, i32(0x1000));
    Value kept = arith::AndIOp::create(b, loc, up, i32(0xFFFFE000));
    return arith::BitcastOp::create(b, loc, f32, kept);
  }

  /// Loop indices with the batch, if any, on the grid's z.
  SmallVector<Value> loopIndices() {
    SmallVector<Value> ivs(op.getNumLoops(), zero);
    if (c.batch)
      ivs[*c.batch] = launch.getBlockIds().z;
    return ivs;
  }

  /// Operand `operand`'s indices at loop indices `ivs`.
  SmallVector<Value> indicesOf(unsigned operand, ArrayRef<Value> ivs) {
    return operandIndices(reads[operand], ivs);
  }

  /// The launch (a block per BM x BN results, 4 warps) and, at the start of
  /// its body, the block's and the lane's coordinates and the shared tiles.
  void createLaunch() {
    Value m = bounds[c.m], n = bounds[c.n];
    Value one = index(1);
    Value gridX = arith::CeilDivUIOp::create(b, loc, n, index(BN));
    Value gridY = arith::CeilDivUIOp::create(b, loc, m, index(BM));
    Value gridZ = c.batch ? bounds[*c.batch] : one;
    int64_t lhsFloats = BM * LhsStride, rhsFloats = BK * RhsStride;
    Value smem =
        i32((lhsFloats + rhsFloats) * static_cast<int64_t>(sizeof(float)));
    launch = gpu::LaunchOp::create(b, loc, gridX, gridY, gridZ, index(32),
                                   index(Warps), one, smem);
    b.setInsertionPointToStart(&launch.getBody().front());
    zero = index(0);
    gpu::KernelDim3 bid = launch.getBlockIds();
    gpu::KernelDim3 tid = launch.getThreadIds();
    m0 = mul(bid.y, BM);
    n0 = mul(bid.x, BN);
    // Lane (g, t) = (lane / 4, lane % 4) of warp (wr, wc).
    Value lane = tid.x, warp = tid.y;
    g = arith::DivUIOp::create(b, loc, lane, index(4));
    t = arith::RemUIOp::create(b, loc, lane, index(4));
    Value wr = arith::DivUIOp::create(b, loc, warp, index(WC));
    Value wc = arith::RemUIOp::create(b, loc, warp, index(WC));
    warpRow = mul(wr, 32);
    warpCol = mul(wc, 32);
    linear = add(lane, mul(warp, 32));
    auto workgroup = workgroupSpace(b.getContext());
    Value shared = dynamicSharedMemory(b, loc);
    auto lhsType = MemRefType::get({BM, LhsStride}, f32,
                                   MemRefLayoutAttrInterface(), workgroup);
    auto rhsType = MemRefType::get({BK, RhsStride}, f32,
                                   MemRefLayoutAttrInterface(), workgroup);
    lhsTile =
        memref::ViewOp::create(b, loc, lhsType, shared, zero, ValueRange{});
    rhsTile = memref::ViewOp::create(
        b, loc, rhsType, shared,
        index(lhsFloats * static_cast<int64_t>(sizeof(float))), ValueRange{});
  }

  /// A fragment: (hi, lo) of the elements at `coords` of a shared tile (lo
  /// only with `split`).
  std::pair<Value, Value> fragment(Value tile,
                                   ArrayRef<std::pair<Value, Value>> coords,
                                   VectorType type) {
    SmallVector<Value> hi, lo;
    for (auto [r, col] : coords) {
      Value x = memref::LoadOp::create(b, loc, tile, ValueRange{r, col});
      Value xh = toTF32(x);
      hi.push_back(xh);
      if (split)
        lo.push_back(toTF32(arith::SubFOp::create(b, loc, x, xh)));
    }
    Value vh = vector::FromElementsOp::create(b, loc, type, hi);
    Value vl =
        split ? vector::FromElementsOp::create(b, loc, type, lo) : Value();
    return {vh, vl};
  }

  /// One step of 8 of the reduction at `kk` in the staged chunk: each
  /// warp's fragments, then its tiles' multiplies into `accs`.
  void multiplyStep(int64_t kk, MutableArrayRef<Value> accs) {
    auto aType = VectorType::get({4, 1}, f32);
    auto bType = VectorType::get({2, 1}, f32);
    Value kt = add(t, kk), kt4 = add(t, kk + 4);
    SmallVector<std::pair<Value, Value>> as, bs;
    for (int64_t mi = 0; mi < MTiles; ++mi) {
      Value r = add(add(warpRow, g), mi * 16);
      Value r8 = add(r, 8);
      as.push_back(
          fragment(lhsTile, {{r, kt}, {r8, kt}, {r, kt4}, {r8, kt4}}, aType));
    }
    for (int64_t ni = 0; ni < NTiles; ++ni) {
      Value col = add(add(warpCol, g), ni * 8);
      bs.push_back(fragment(rhsTile, {{kt, col}, {kt4, col}}, bType));
    }
    for (int64_t mi = 0; mi < MTiles; ++mi)
      for (int64_t ni = 0; ni < NTiles; ++ni) {
        Value &acc = accs[mi * NTiles + ni];
        auto mma = [&](Value x, Value y) {
          acc = nvgpu::MmaSyncOp::create(b, loc, x, y, acc,
                                         ArrayRef<int64_t>{16, 8, 8},
                                         /*tf32Enabled=*/true);
        };
        if (split) {
          mma(as[mi].second, bs[ni].first);
          mma(as[mi].first, bs[ni].second);
        }
        mma(as[mi].first, bs[ni].first);
      }
  }

  /// The loop over chunks of BK of the reduction: stage both operands'
  /// tiles, multiply, and keep the tiles until every warp has read them.
  /// Its results are the warp's tiles' sums.
  scf::ForOp multiply() {
    auto accType = VectorType::get({2, 2}, f32);
    Value zeroAcc = arith::ConstantOp::create(
        b, loc, accType, DenseElementsAttr::get(accType, 0.0f));
    SmallVector<Value> inits(MTiles * NTiles, zeroAcc);
    auto chunks =
        scf::ForOp::create(b, loc, zero, bounds[c.k], index(BK), inits);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(chunks.getBody());
    Value k0 = chunks.getInductionVar();
    // Both operands' tiles of the chunk, zeros outside the operands (the
    // multiplies read whole tiles).
    SmallVector<Value> ivs = loopIndices();
    Value m = bounds[c.m], n = bounds[c.n], k = bounds[c.k];
    stageTile(b, loc, op, reads, ivs, linear, Threads,
              {c.lhs, c.m, c.k, m0, k0, m, k, BM, BK, lhsTile},
              /*zeroOutside=*/true);
    stageTile(b, loc, op, reads, ivs, linear, Threads,
              {c.rhs, c.k, c.n, k0, n0, k, n, BK, BN, rhsTile},
              /*zeroOutside=*/true);
    gpu::BarrierOp::create(b, loc);
    SmallVector<Value> accs(chunks.getRegionIterArgs());
    for (int64_t kk = 0; kk < BK; kk += 8)
      multiplyStep(kk, accs);
    gpu::BarrierOp::create(b, loc);
    scf::YieldOp::create(b, loc, accs);
    return chunks;
  }

  /// Result (i, j) of tile (mi, ni): row g + 8 i, column 2 t + j of the
  /// tile; C +- the sum, where C is `fillValue` if a fill set it.
  void store(scf::ForOp chunks, Value fillValue) {
    Value output = op.getDpsInits()[0];
    for (int64_t mi = 0; mi < MTiles; ++mi)
      for (int64_t ni = 0; ni < NTiles; ++ni)
        for (int64_t i = 0; i < 2; ++i)
          for (int64_t j = 0; j < 2; ++j) {
            Value row = add(add(add(m0, warpRow), g), mi * 16 + 8 * i);
            Value col = add(add(add(n0, warpCol), mul(t, 2)), ni * 8 + j);
            Value inside = arith::AndIOp::create(b, loc, ult(row, bounds[c.m]),
                                                 ult(col, bounds[c.n]));
            auto ifInside =
                scf::IfOp::create(b, loc, TypeRange{}, inside, false);
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPointToStart(ifInside.thenBlock());
            SmallVector<Value> ivs = loopIndices();
            ivs[c.m] = row;
            ivs[c.n] = col;
            SmallVector<Value> at = indicesOf(2, ivs);
            Value sum = vector::ExtractOp::create(
                b, loc, chunks.getResult(mi * NTiles + ni),
                ArrayRef<int64_t>{i, j});
            Value old =
                fillValue
                    ? fillValue
                    : memref::LoadOp::create(b, loc, output, at).getResult();
            Value v = sign > 0
                          ? arith::AddFOp::create(b, loc, old, sum).getResult()
                          : arith::SubFOp::create(b, loc, old, sum).getResult();
            memref::StoreOp::create(b, loc, v, output, at);
          }
  }
};

} // namespace

void gptq::buildTensorCoreProduct(linalg::LinalgOp op, const Contraction &c,
                                  int sign, bool split) {
  TensorCoreKernel(op, c, sign, split).build();
}
