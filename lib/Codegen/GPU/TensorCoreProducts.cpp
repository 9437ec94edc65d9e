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

struct KernelBuilder {
  OpBuilder &b;
  Location loc;

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
    return arith::BitcastOp::create(b, loc, b.getF32Type(), kept);
  }
};

} // namespace

void gptq::buildTensorCoreProduct(linalg::LinalgOp op, const Contraction &c,
                                  int sign, bool split) {
  Location loc = op.getLoc();
  OpBuilder b(op);
  KernelBuilder h{b, loc};
  SmallVector<SmallVector<unsigned>> reads;
  for (AffineMap map : op.getIndexingMapsArray())
    reads.push_back(*dimsOf(map));
  SmallVector<Value> bounds(op.getNumLoops());
  for (OpOperand &operand : op->getOpOperands())
    for (auto [pos, d] : llvm::enumerate(reads[operand.getOperandNumber()]))
      if (!bounds[d])
        bounds[d] =
            memref::DimOp::create(b, loc, operand.get(), pos).getResult();
  Value m = bounds[c.m], n = bounds[c.n], k = bounds[c.k];
  // A fill of C just before the op: the results start from its value.
  linalg::FillOp fill = fillBefore(op);
  Value one = h.index(1);
  Value gridX = arith::CeilDivUIOp::create(b, loc, n, h.index(BN));
  Value gridY = arith::CeilDivUIOp::create(b, loc, m, h.index(BM));
  Value gridZ = c.batch ? bounds[*c.batch] : one;
  Type f32 = b.getF32Type();
  int64_t lhsFloats = BM * LhsStride, rhsFloats = BK * RhsStride;
  Value smem =
      h.i32((lhsFloats + rhsFloats) * static_cast<int64_t>(sizeof(float)));
  auto launch = gpu::LaunchOp::create(b, loc, gridX, gridY, gridZ, h.index(32),
                                      h.index(Warps), one, smem);
  b.setInsertionPointToStart(&launch.getBody().front());
  Value zero = h.index(0);
  gpu::KernelDim3 bid = launch.getBlockIds();
  gpu::KernelDim3 tid = launch.getThreadIds();
  auto loopIndices = [&]() {
    SmallVector<Value> ivs(op.getNumLoops(), zero);
    if (c.batch)
      ivs[*c.batch] = bid.z;
    return ivs;
  };
  auto indicesOf = [&](unsigned operand, ArrayRef<Value> ivs) {
    SmallVector<Value> indices;
    for (unsigned d : reads[operand])
      indices.push_back(ivs[d]);
    return indices;
  };
  Value m0 = h.mul(bid.y, BM), n0 = h.mul(bid.x, BN);
  // Lane (g, t) = (lane / 4, lane % 4) of warp (wr, wc).
  Value lane = tid.x, warp = tid.y;
  Value g = arith::DivUIOp::create(b, loc, lane, h.index(4));
  Value t = arith::RemUIOp::create(b, loc, lane, h.index(4));
  Value wr = arith::DivUIOp::create(b, loc, warp, h.index(WC));
  Value wc = arith::RemUIOp::create(b, loc, warp, h.index(WC));
  Value warpRow = h.mul(wr, 32), warpCol = h.mul(wc, 32);

  auto workgroup = workgroupSpace(b.getContext());
  Value shared = dynamicSharedMemory(b, loc);
  auto lhsType = MemRefType::get({BM, LhsStride}, f32,
                                 MemRefLayoutAttrInterface(), workgroup);
  auto rhsType = MemRefType::get({BK, RhsStride}, f32,
                                 MemRefLayoutAttrInterface(), workgroup);
  Value lhsTile =
      memref::ViewOp::create(b, loc, lhsType, shared, zero, ValueRange{});
  Value rhsTile = memref::ViewOp::create(
      b, loc, rhsType, shared,
      h.index(lhsFloats * static_cast<int64_t>(sizeof(float))), ValueRange{});
  Value linear = h.add(lane, h.mul(warp, 32));

  auto accType = VectorType::get({2, 2}, f32);
  Value zeroAcc = arith::ConstantOp::create(
      b, loc, accType, DenseElementsAttr::get(accType, 0.0f));
  SmallVector<Value> inits(MTiles * NTiles, zeroAcc);
  auto chunks = scf::ForOp::create(b, loc, zero, k, h.index(BK), inits);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(chunks.getBody());
    Value k0 = chunks.getInductionVar();
    // Tile [i][j] = operand(outer0 + i, inner0 + j) over loop dimensions
    // (outerDim, innerDim), zero outside the operand; consecutive threads
    // take consecutive elements of the operand's rows.
    auto stage = [&](unsigned operand, Value outer0, Value inner0,
                     unsigned outerDim, unsigned innerDim, int64_t P, int64_t Q,
                     Value outerSize, Value innerSize, Value tileBuf) {
      bool alongInner = reads[operand].back() == innerDim;
      for (int64_t st = 0; st < P * Q / Threads; ++st) {
        Value e = h.add(linear, st * Threads);
        Value i, j;
        if (alongInner) {
          j = arith::RemUIOp::create(b, loc, e, h.index(Q));
          i = arith::DivUIOp::create(b, loc, e, h.index(Q));
        } else {
          i = arith::RemUIOp::create(b, loc, e, h.index(P));
          j = arith::DivUIOp::create(b, loc, e, h.index(P));
        }
        Value oi = h.add(outer0, i), ij = h.add(inner0, j);
        Value inside = arith::AndIOp::create(b, loc, h.ult(oi, outerSize),
                                             h.ult(ij, innerSize));
        auto value = scf::IfOp::create(b, loc, TypeRange{f32}, inside, true);
        {
          OpBuilder::InsertionGuard g2(b);
          b.setInsertionPointToStart(value.thenBlock());
          SmallVector<Value> ivs = loopIndices();
          ivs[outerDim] = oi;
          ivs[innerDim] = ij;
          Value v = memref::LoadOp::create(b, loc, op->getOperand(operand),
                                           indicesOf(operand, ivs));
          scf::YieldOp::create(b, loc, v);
          b.setInsertionPointToStart(value.elseBlock());
          scf::YieldOp::create(
              b, loc,
              arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f))
                  .getResult());
        }
        memref::StoreOp::create(b, loc, value.getResult(0), tileBuf,
                                ValueRange{i, j});
      }
    };
    stage(c.lhs, m0, k0, c.m, c.k, BM, BK, m, k, lhsTile);
    stage(c.rhs, k0, n0, c.k, c.n, BK, BN, k, n, rhsTile);
    gpu::BarrierOp::create(b, loc);
    SmallVector<Value> accs(chunks.getRegionIterArgs());
    // A fragment: (hi, lo) of the elements at `coords` of a shared tile.
    auto fragment = [&](Value tile, ArrayRef<std::pair<Value, Value>> coords,
                        VectorType type) -> std::pair<Value, Value> {
      SmallVector<Value> hi, lo;
      for (auto [r, col] : coords) {
        Value x = memref::LoadOp::create(b, loc, tile, ValueRange{r, col});
        Value xh = h.toTF32(x);
        hi.push_back(xh);
        if (split)
          lo.push_back(h.toTF32(arith::SubFOp::create(b, loc, x, xh)));
      }
      Value vh = vector::FromElementsOp::create(b, loc, type, hi);
      Value vl =
          split ? vector::FromElementsOp::create(b, loc, type, lo) : Value();
      return {vh, vl};
    };
    auto aType = VectorType::get({4, 1}, f32);
    auto bType = VectorType::get({2, 1}, f32);
    for (int64_t kk = 0; kk < BK; kk += 8) {
      Value kt = h.add(t, kk), kt4 = h.add(t, kk + 4);
      SmallVector<std::pair<Value, Value>> as, bs;
      for (int64_t mi = 0; mi < MTiles; ++mi) {
        Value r = h.add(h.add(warpRow, g), mi * 16);
        Value r8 = h.add(r, 8);
        as.push_back(
            fragment(lhsTile, {{r, kt}, {r8, kt}, {r, kt4}, {r8, kt4}}, aType));
      }
      for (int64_t ni = 0; ni < NTiles; ++ni) {
        Value col = h.add(h.add(warpCol, g), ni * 8);
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
    // The tiles are read by all before the next chunk overwrites them.
    gpu::BarrierOp::create(b, loc);
    scf::YieldOp::create(b, loc, accs);
  }
  // Result (i, j) of tile (mi, ni): row g + 8 i, column 2 t + j of the
  // tile; C +- the sum, where C is the fill's value if a fill set it.
  Value fillValue = fill ? fill.getDpsInputs()[0] : Value();
  if (fill)
    fill->erase();
  Value output = op.getDpsInits()[0];
  for (int64_t mi = 0; mi < MTiles; ++mi)
    for (int64_t ni = 0; ni < NTiles; ++ni)
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 2; ++j) {
          Value row = h.add(h.add(h.add(m0, warpRow), g), mi * 16 + 8 * i);
          Value col = h.add(h.add(h.add(n0, warpCol), h.mul(t, 2)), ni * 8 + j);
          Value inside =
              arith::AndIOp::create(b, loc, h.ult(row, m), h.ult(col, n));
          auto store = scf::IfOp::create(b, loc, TypeRange{}, inside, false);
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(store.thenBlock());
          SmallVector<Value> ivs = loopIndices();
          ivs[c.m] = row;
          ivs[c.n] = col;
          SmallVector<Value> at = indicesOf(2, ivs);
          Value sum = vector::ExtractOp::create(
              b, loc, chunks.getResult(mi * NTiles + ni),
              ArrayRef<int64_t>{i, j});
          Value old =
              fill ? fillValue
                   : memref::LoadOp::create(b, loc, output, at).getResult();
          Value v = sign > 0
                        ? arith::AddFOp::create(b, loc, old, sum).getResult()
                        : arith::SubFOp::create(b, loc, old, sum).getResult();
          memref::StoreOp::create(b, loc, v, output, at);
        }
  gpu::TerminatorOp::create(b, loc);
  op->erase();
}
