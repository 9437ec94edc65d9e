//===- MatmulToKernel.cpp - Batch matmuls on the CPU matrix kernel --------===//
//
// The CPU schedule of contractions: float32 linalg.batch_matmul ops in the
// normal form of gptq-normalize-contractions become calls of the library's
// register-tiled kernel, __gptq_matmul.
//
//===----------------------------------------------------------------------===//

#include "Library.h"
#include "gptq/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQMATMULTOKERNEL
#include "gptq/Conversion/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {

/// The loops of a normal-form batch matmul, (b, m, n, k) as d0..d3.
AffineMap batchMap(MLIRContext *ctx, ArrayRef<unsigned> dims) {
  SmallVector<AffineExpr> results;
  for (unsigned d : dims)
    results.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(4, 0, results, ctx);
}

/// Whether `op` is in the normal form; sets whether A is [B, K, M] and B is
/// [B, N, K].
bool isNormalForm(linalg::BatchMatmulOp op, bool &transA, bool &transB) {
  MLIRContext *ctx = op.getContext();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (maps.size() != 3 || maps[2] != batchMap(ctx, {0, 1, 2}))
    return false;
  if (maps[0] == batchMap(ctx, {0, 1, 3}))
    transA = false;
  else if (maps[0] == batchMap(ctx, {0, 3, 1}))
    transA = true;
  else
    return false;
  if (maps[1] == batchMap(ctx, {0, 3, 2}))
    transB = false;
  else if (maps[1] == batchMap(ctx, {0, 2, 3}))
    transB = true;
  else
    return false;
  return true;
}

bool isF32Tensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() == 3 && tensor.getElementType().isF32();
}

/// The init a zero-filled output comes from, or null.
Value zeroFilledInit(Value init) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return nullptr;
  auto constant = fill.getInputs()[0].getDefiningOp<arith::ConstantOp>();
  auto value = constant ? dyn_cast<FloatAttr>(constant.getValue()) : nullptr;
  if (!value || !value.getValue().isPosZero())
    return nullptr;
  return fill.getOutputs()[0];
}

struct LowerBatchMatmul : OpRewritePattern<linalg::BatchMatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::BatchMatmulOp op,
                                PatternRewriter &rewriter) const override {
    bool transA = false, transB = false;
    if (!op.hasPureTensorSemantics() || !isNormalForm(op, transA, transB))
      return rewriter.notifyMatchFailure(op, "not in the normal form");
    Value a = op.getDpsInputs()[0], b = op.getDpsInputs()[1];
    Value init = op.getDpsInits()[0];
    if (!isF32Tensor(a.getType()) || !isF32Tensor(b.getType()) ||
        !isF32Tensor(init.getType()))
      return rewriter.notifyMatchFailure(op, "not float32 of rank 3");
    Value c = init;
    Value zeroed = zeroFilledInit(init);
    if (zeroed)
      c = zeroed;
    Location loc = op.getLoc();
    auto flag = [&](bool v) -> Value {
      return arith::ConstantOp::create(rewriter, loc, rewriter.getBoolAttr(v));
    };
    SmallVector<Value> results = gptq::callLibrary(
        rewriter, loc, "matmul",
        {a, b, c, flag(transA), flag(transB), flag(zeroed != nullptr)},
        op->getResultTypes());
    // One instance of the kernel for the whole module, not one per call
    // site: it is large, and its settings are cheap run-time branches.
    for (Value r : results) {
      Operation *def = r.getDefiningOp();
      if (auto cast = dyn_cast_or_null<tensor::CastOp>(def))
        def = cast.getSource().getDefiningOp();
      if (auto call = dyn_cast_or_null<func::CallOp>(def))
        call.setNoInline(true);
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct GPTQMatmulToKernelPass
    : gptq::impl::GPTQMatmulToKernelBase<GPTQMatmulToKernelPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    RewritePatternSet patterns(&getContext());
    patterns.add<LowerBatchMatmul>(&getContext());
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyPatternsGreedily(module, std::move(patterns), config)))
      return signalPassFailure();
    if (failed(gptq::addLibraryFunctions(module)))
      return signalPassFailure();
  }
};
} // namespace
