//===- EmulateWarpMMA.cpp - Warp matrix multiplies through shared memory
//---===//
//
// nvgpu.mma.sync (m16n8k8, TF32) for kernels that run on the host: each
// lane's fragments go through its warp's part of the dynamic shared memory,
// between two barriers, and each lane computes its results from the whole
// tiles.
//
//===----------------------------------------------------------------------===//

#include "SharedMemory.h"
#include "gptq/Codegen/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQEMULATEWARPMMA
#include "gptq/Codegen/GPU/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {

// A warp's scratch: A (16 x 8) then B (8 x 8), floats.
constexpr int64_t AFloats = 16 * 8, BFloats = 8 * 8;
constexpr int64_t WarpBytes = (AFloats + BFloats) * 4;

std::optional<int64_t> constantOf(Value v) {
  APInt value;
  if (v && matchPattern(v, m_ConstantInt(&value)))
    return value.getSExtValue();
  return std::nullopt;
}

bool isEmulated(nvgpu::MmaSyncOp mma) {
  std::array<int64_t, 3> shape = mma.getMmaShapeAsArray();
  return shape[0] == 16 && shape[1] == 8 && shape[2] == 8 &&
         mma.getTf32EnabledAttr() &&
         mma.getMatrixA().getType() ==
             VectorType::get({4, 1}, Float32Type::get(mma.getContext())) &&
         mma.getMatrixB().getType() ==
             VectorType::get({2, 1}, Float32Type::get(mma.getContext())) &&
         mma.getMatrixC().getType() ==
             VectorType::get({2, 2}, Float32Type::get(mma.getContext()));
}

struct GPTQEmulateWarpMMAPass
    : gptq::impl::GPTQEmulateWarpMMABase<GPTQEmulateWarpMMAPass> {
  void runOnOperation() override {
    WalkResult result = getOperation().walk([&](gpu::LaunchOp launch) {
      SmallVector<nvgpu::MmaSyncOp> mmas;
      launch.walk([&](nvgpu::MmaSyncOp mma) { mmas.push_back(mma); });
      if (mmas.empty())
        return WalkResult::advance();
      return failed(emulate(launch, mmas)) ? WalkResult::interrupt()
                                           : WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }

  LogicalResult emulate(gpu::LaunchOp launch, ArrayRef<nvgpu::MmaSyncOp> mmas) {
    gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
    std::optional<int64_t> bx = constantOf(block.x), by = constantOf(block.y),
                           bz = constantOf(block.z);
    Value asked = launch.getDynamicSharedMemorySize();
    std::optional<int64_t> bytes = asked ? constantOf(asked) : 0;
    if (!bx || !by || !bz || !bytes || (*bx * *by * *bz) % 32 != 0)
      return launch.emitError()
             << "gptq-emulate-warp-mma: a launch with nvgpu.mma.sync needs "
                "constant block and shared memory sizes and whole warps";
    for (nvgpu::MmaSyncOp mma : mmas)
      if (!isEmulated(mma))
        return mma.emitError() << "gptq-emulate-warp-mma: only m16n8k8 with "
                                  "tf32Enabled and f32 fragments is emulated";
    int64_t warps = *bx * *by * *bz / 32;
    int64_t base = (*bytes + 15) / 16 * 16;
    OpBuilder b(launch);
    launch.getDynamicSharedMemorySizeMutable().assign(
        arith::ConstantIntOp::create(b, launch.getLoc(), b.getI32Type(),
                                     base + warps * WarpBytes));
    for (nvgpu::MmaSyncOp mma : mmas)
      lower(mma, launch, base);
    return success();
  }

  void lower(nvgpu::MmaSyncOp mma, gpu::LaunchOp launch, int64_t base) {
    Location loc = mma.getLoc();
    OpBuilder b(mma);
    auto index = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    auto add = [&](Value x, int64_t y) -> Value {
      return arith::AddIOp::create(b, loc, x, index(y));
    };
    Type f32 = b.getF32Type();
    // The thread's warp and lane: warps are runs of 32 threads, x fastest.
    Value linear = gptq::linearThreadId(b, loc, launch);
    Value warp = arith::DivUIOp::create(b, loc, linear, index(32));
    Value lane = arith::RemUIOp::create(b, loc, linear, index(32));
    Value g = arith::DivUIOp::create(b, loc, lane, index(4));
    Value t = arith::RemUIOp::create(b, loc, lane, index(4));
    Value offset = arith::AddIOp::create(
        b, loc, index(base),
        arith::MulIOp::create(b, loc, warp, index(WarpBytes)));
    Value shared = gptq::dynamicSharedMemory(b, loc);
    auto space = gptq::workgroupSpace(b.getContext());
    Value aTile = memref::ViewOp::create(
        b, loc,
        MemRefType::get({16, 8}, f32, MemRefLayoutAttrInterface(), space),
        shared, offset, ValueRange{});
    Value bTile = memref::ViewOp::create(
        b, loc,
        MemRefType::get({8, 8}, f32, MemRefLayoutAttrInterface(), space),
        shared, add(offset, AFloats * 4), ValueRange{});
    // The lane's fragments into the tiles.
    Value g8 = add(g, 8), t4 = add(t, 4);
    std::pair<Value, Value> aAt[4] = {{g, t}, {g8, t}, {g, t4}, {g8, t4}};
    for (int64_t e = 0; e < 4; ++e) {
      Value v = vector::ExtractOp::create(b, loc, mma.getMatrixA(),
                                          ArrayRef<int64_t>{e, 0});
      memref::StoreOp::create(b, loc, v, aTile,
                              ValueRange{aAt[e].first, aAt[e].second});
    }
    std::pair<Value, Value> bAt[2] = {{t, g}, {t4, g}};
    for (int64_t e = 0; e < 2; ++e) {
      Value v = vector::ExtractOp::create(b, loc, mma.getMatrixB(),
                                          ArrayRef<int64_t>{e, 0});
      memref::StoreOp::create(b, loc, v, bTile,
                              ValueRange{bAt[e].first, bAt[e].second});
    }
    gpu::BarrierOp::create(b, loc);
    // Operands as the tensor cores read TF32: 10 bits of fraction kept.
    auto tf32 = [&](Value x) -> Value {
      Value bits = arith::BitcastOp::create(b, loc, b.getI32Type(), x);
      Value kept = arith::AndIOp::create(
          b, loc, bits,
          arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0xFFFFE000));
      return arith::BitcastOp::create(b, loc, f32, kept);
    };
    Value result = mma.getMatrixC();
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 2; ++j) {
        Value row = i ? g8 : g;
        Value col = add(arith::MulIOp::create(b, loc, t, index(2)), j);
        Value acc = vector::ExtractOp::create(b, loc, mma.getMatrixC(),
                                              ArrayRef<int64_t>{i, j});
        for (int64_t k = 0; k < 8; ++k) {
          Value kk = index(k);
          Value x =
              tf32(memref::LoadOp::create(b, loc, aTile, ValueRange{row, kk}));
          Value y =
              tf32(memref::LoadOp::create(b, loc, bTile, ValueRange{kk, col}));
          acc = arith::AddFOp::create(b, loc, acc,
                                      arith::MulFOp::create(b, loc, x, y));
        }
        result = vector::InsertOp::create(b, loc, acc, result,
                                          ArrayRef<int64_t>{i, j});
      }
    // Every lane has read the tiles before the next multiply writes them.
    gpu::BarrierOp::create(b, loc);
    mma.replaceAllUsesWith(result);
    mma.erase();
  }
};

} // namespace
