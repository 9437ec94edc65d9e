//===- NormalizeContractions.cpp - Contractions as batch matmuls ----------===//
//
// The target-independent half of the model codegen: every float32
// contraction on tensors becomes one linalg.batch_matmul on 3-D operands
// (batch, rows, columns), transposed operands expressed by its maps.
//
//===----------------------------------------------------------------------===//

#include "gptq/Codegen/Common/ContractionForm.h"
#include "gptq/Codegen/Common/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQNORMALIZECONTRACTIONS
#include "gptq/Codegen/Common/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {

/// The loops an operand's map reads, in the order of its dimensions.
SmallVector<unsigned> loopsOf(AffineMap map) {
  SmallVector<unsigned> loops;
  for (AffineExpr e : map.getResults())
    loops.push_back(cast<AffineDimExpr>(e).getPosition());
  return loops;
}

SmallVector<unsigned> concat(ArrayRef<ArrayRef<unsigned>> parts) {
  SmallVector<unsigned> all;
  for (ArrayRef<unsigned> p : parts)
    all.append(p.begin(), p.end());
  return all;
}

/// Where loop `l` is in `loops`.
unsigned position(ArrayRef<unsigned> loops, unsigned l) {
  return llvm::find(loops, l) - loops.begin();
}

/// `loops` in the order they appear in `order`.
SmallVector<unsigned> sortedBy(ArrayRef<unsigned> loops,
                               ArrayRef<unsigned> order) {
  SmallVector<unsigned> sorted;
  for (unsigned l : order)
    if (llvm::is_contained(loops, l))
      sorted.push_back(l);
  return sorted;
}

//===----------------------------------------------------------------------===//
// Causal masks
//===----------------------------------------------------------------------===//
//
// Attention's scores are read only through a mask that keeps key t <= query
// s, and the probabilities are zero past it. Both are facts about loops of
// the ops that consume or produce a contraction: a consumer's `linalg.index`
// of the loops that read the query and key dimensions, compared by
// `arith.cmpi`, selects the value.

/// Whether `cond` is false wherever loop `t` > loop `s`: `t <= s`, `t < s`,
/// `s >= t` or `s > t` on the loops' `linalg.index`.
bool isCausalCondition(Value cond, unsigned s, unsigned t) {
  auto cmp = cond.getDefiningOp<arith::CmpIOp>();
  if (!cmp)
    return false;
  auto loopOf = [](Value v) -> std::optional<unsigned> {
    if (auto index = v.getDefiningOp<linalg::IndexOp>())
      return index.getDim();
    return std::nullopt;
  };
  std::optional<unsigned> lhs = loopOf(cmp.getLhs()),
                          rhs = loopOf(cmp.getRhs());
  if (!lhs || !rhs)
    return false;
  using P = arith::CmpIPredicate;
  switch (cmp.getPredicate()) {
  case P::ule:
  case P::ult:
  case P::sle:
  case P::slt:
    return *lhs == t && *rhs == s;
  case P::uge:
  case P::ugt:
  case P::sge:
  case P::sgt:
    return *lhs == s && *rhs == t;
  default:
    return false;
  }
}

/// The loop of `op` that its operand's map reads in dimension `dim`.
std::optional<unsigned> loopOfDim(linalg::LinalgOp op, OpOperand *operand,
                                  unsigned dim) {
  AffineMap map = op.getMatchingIndexingMap(operand);
  if (dim >= map.getNumResults())
    return std::nullopt;
  if (auto d = dyn_cast<AffineDimExpr>(map.getResult(dim)))
    return d.getPosition();
  return std::nullopt;
}

/// Whether every use of `v` (inside a body, depth-limited) feeds only the
/// value a causal select keeps: through single-result arithmetic to the
/// true operand of an `arith.select` whose condition is causal.
bool onlyKeptByMask(Value v, unsigned s, unsigned t, int depth = 0) {
  if (depth > 8)
    return false;
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (auto select = dyn_cast<arith::SelectOp>(user)) {
      if (use.getOperandNumber() == 1 && select.getFalseValue() != v &&
          isCausalCondition(select.getCondition(), s, t))
        continue;
      return false;
    }
    if (user->getNumResults() != 1 || user->getNumRegions() != 0 ||
        !isa<arith::ArithDialect, math::MathDialect>(user->getDialect()) ||
        !isPure(user))
      return false;
    if (!onlyKeptByMask(user->getResult(0), s, t, depth + 1))
      return false;
  }
  return true;
}

/// Whether elements of `tensor` with index `tDim` > index `sDim` are never
/// read: its only uses are shape queries and inputs of linalg ops that
/// keep them only under a causal mask on the loops reading those dimensions.
bool unreadAbove(Value tensor, unsigned sDim, unsigned tDim) {
  for (OpOperand &use : tensor.getUses()) {
    Operation *user = use.getOwner();
    if (isa<tensor::DimOp>(user))
      continue;
    auto consumer = dyn_cast<linalg::GenericOp>(user);
    if (!consumer || !consumer.isDpsInput(&use))
      return false;
    std::optional<unsigned> s = loopOfDim(consumer, &use, sDim);
    std::optional<unsigned> t = loopOfDim(consumer, &use, tDim);
    if (!s || !t ||
        !onlyKeptByMask(consumer.getMatchingBlockArgument(&use), *s, *t))
      return false;
  }
  return true;
}

bool zeroAbove(Value tensor, unsigned sDim, unsigned tDim, int depth = 0);

/// Whether `v`, computed in the body of `op`, is +0.0 wherever loop `t` >
/// loop `s`: a causal select of zero, a quotient of such a value (a row
/// whose divisor is zero or NaN is not finite in any case), or an input
/// that is zero past the same loops.
bool zeroWhere(linalg::GenericOp op, Value v, unsigned s, unsigned t,
               int depth) {
  if (depth > 8)
    return false;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (arg.getOwner() != op.getBody())
      return false;
    OpOperand *operand = op.getMatchingOpOperand(arg);
    if (!op.isDpsInput(operand))
      return false;
    AffineMap map = op.getMatchingIndexingMap(operand);
    MLIRContext *ctx = op.getContext();
    std::optional<unsigned> sDim =
        map.getResultPosition(getAffineDimExpr(s, ctx));
    std::optional<unsigned> tDim =
        map.getResultPosition(getAffineDimExpr(t, ctx));
    return sDim && tDim && zeroAbove(operand->get(), *sDim, *tDim, depth + 1);
  }
  Operation *def = v.getDefiningOp();
  FloatAttr constant;
  if (matchPattern(v, m_Constant(&constant)))
    return constant.getValue().isPosZero();
  if (auto select = dyn_cast<arith::SelectOp>(def)) {
    if (isCausalCondition(select.getCondition(), s, t))
      return zeroWhere(op, select.getFalseValue(), s, t, depth + 1);
    return zeroWhere(op, select.getTrueValue(), s, t, depth + 1) &&
           zeroWhere(op, select.getFalseValue(), s, t, depth + 1);
  }
  if (auto div = dyn_cast<arith::DivFOp>(def))
    return zeroWhere(op, div.getLhs(), s, t, depth + 1);
  return false;
}

bool zeroAbove(Value tensor, unsigned sDim, unsigned tDim, int depth) {
  auto op = tensor.getDefiningOp<linalg::GenericOp>();
  if (!op || depth > 8 || op.getNumDpsInits() != 1 ||
      op.getNumParallelLoops() != op.getNumLoops())
    return false;
  OpOperand *init = op.getDpsInitOperand(0);
  std::optional<unsigned> s = loopOfDim(op, init, sDim);
  std::optional<unsigned> t = loopOfDim(op, init, tDim);
  auto yield = cast<linalg::YieldOp>(op.getBody()->getTerminator());
  return s && t && zeroWhere(op, yield.getOperand(0), *s, *t, depth);
}

/// The loops of a contraction by class, each class in the order the normal
/// form takes them, and the loops each operand's dimensions read.
struct LoopClasses {
  SmallVector<unsigned> batch, m, n, k;
  SmallVector<unsigned> lhs, rhs, out;
};

/// `op`'s loops when it is a float32 contraction on tensors of
/// projected-permutation maps that is not a batch matmul in normal form
/// already; nothing otherwise.
std::optional<LoopClasses> matchContraction(linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1)
    return std::nullopt;
  bool transA = false, transB = false;
  if (auto bmm = dyn_cast<linalg::BatchMatmulOp>(op.getOperation());
      bmm && gptq::isNormalBatchMatmul(bmm, transA, transB))
    return std::nullopt;
  for (Value v : op->getOperands()) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || !type.getElementType().isF32())
      return std::nullopt;
  }
  if (!linalg::isaContractionOpInterface(op))
    return std::nullopt;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->m.empty() || dims->n.empty() || dims->k.empty())
    return std::nullopt;
  if (dims->batch.size() + dims->m.size() + dims->n.size() + dims->k.size() !=
      op.getNumLoops())
    return std::nullopt;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  for (AffineMap map : maps)
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/false))
      return std::nullopt;
  LoopClasses c;
  c.lhs = loopsOf(maps[0]);
  c.rhs = loopsOf(maps[1]);
  c.out = loopsOf(maps[2]);
  // One order per class: batch, M and N as the output has them, K as the
  // left operand has it. When the output must be transposed back anyway
  // (its batch, M and N loops interleave), batch and M follow the left
  // operand and N the right one instead, so that those need no copy.
  c.batch = sortedBy(dims->batch, c.out);
  c.m = sortedBy(dims->m, c.out);
  c.n = sortedBy(dims->n, c.out);
  c.k = sortedBy(dims->k, c.lhs);
  if (concat({c.batch, c.m, c.n}) != ArrayRef<unsigned>(c.out)) {
    c.batch = sortedBy(dims->batch, c.lhs);
    c.m = sortedBy(dims->m, c.lhs);
    c.n = sortedBy(dims->n, c.rhs);
  }
  if (c.lhs.size() != c.batch.size() + c.m.size() + c.k.size() ||
      c.rhs.size() != c.batch.size() + c.n.size() + c.k.size() ||
      c.out.size() != c.batch.size() + c.m.size() + c.n.size())
    return std::nullopt;
  return c;
}

/// Builds a matched contraction's normal form: its operands transposed (or
/// read transposed through the maps) and collapsed to [batch, rows,
/// columns], one linalg.batch_matmul, and its result back in the op's
/// layout.
class NormalFormBuilder {
public:
  NormalFormBuilder(PatternRewriter &rewriter, linalg::LinalgOp op,
                    LoopClasses loops)
      : rewriter(rewriter), op(op), loc(op.getLoc()), c(std::move(loops)),
        sizes(op.getNumLoops()) {
    // Each loop's size.
    for (auto [operandIndex, map] :
         llvm::enumerate(op.getIndexingMapsArray())) {
      Value operand = op->getOperand(operandIndex);
      for (auto [dim, loop] : llvm::enumerate(loopsOf(map)))
        if (!sizes[loop])
          sizes[loop] = tensor::getMixedSize(rewriter, loc, operand, dim);
    }
  }

  /// The value that replaces the op's result.
  Value build() {
    bool transA = false, transB = false, unused = false;
    Value lhs = normalize(op->getOperand(0), c.lhs, {c.batch, c.m, c.k},
                          {c.batch, c.k, c.m}, transA);
    Value rhs = normalize(op->getOperand(1), c.rhs, {c.batch, c.k, c.n},
                          {c.batch, c.n, c.k}, transB);
    // The output: a zero-filled init becomes a fill of the new shape.
    Value init = op.getDpsInits()[0];
    Value out;
    SmallVector<OpFoldResult> outShape{groupSize(c.batch), groupSize(c.m),
                                       groupSize(c.n)};
    if (auto fill = init.getDefiningOp<linalg::FillOp>()) {
      Value empty = tensor::EmptyOp::create(rewriter, loc, outShape,
                                            rewriter.getF32Type());
      out = linalg::FillOp::create(rewriter, loc, fill.getInputs()[0], empty)
                .getResult(0);
    } else {
      out = normalize(init, c.out, {c.batch, c.m, c.n}, {}, unused);
    }
    auto bmm =
        linalg::BatchMatmulOp::create(rewriter, loc, TypeRange{out.getType()},
                                      ValueRange{lhs, rhs}, ValueRange{out});
    bmm.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(
        gptq::batchMatmulMaps(op->getContext(), transA, transB)));
    markTriangles(bmm);
    return restoreLayout(bmm->getResult(0));
  }

private:
  /// The product of the sizes of `loops`.
  OpFoldResult groupSize(ArrayRef<unsigned> loops) {
    OpFoldResult size = rewriter.getIndexAttr(1);
    for (unsigned l : loops) {
      std::optional<int64_t> a = getConstantIntValue(size);
      std::optional<int64_t> b = getConstantIntValue(sizes[l]);
      if (a && b) {
        size = rewriter.getIndexAttr(*a * *b);
        continue;
      }
      size = arith::MulIOp::create(
                 rewriter, loc,
                 getValueOrCreateConstantIndexOp(rewriter, loc, size),
                 getValueOrCreateConstantIndexOp(rewriter, loc, sizes[l]))
                 .getResult();
    }
    return size;
  }

  bool isUnit(unsigned l) {
    std::optional<int64_t> size = getConstantIntValue(sizes[l]);
    return size && *size == 1;
  }

  /// The dimensions of `loops` grouped so that each unit loop joins the
  /// next one (or the last).
  SmallVector<ReassociationIndices> unitGroups(ArrayRef<unsigned> loops) {
    SmallVector<ReassociationIndices> groups;
    ReassociationIndices pending;
    for (auto [d, l] : llvm::enumerate(loops)) {
      pending.push_back(d);
      if (!isUnit(l)) {
        groups.push_back(pending);
        pending.clear();
      }
    }
    if (!groups.empty())
      groups.back().append(pending.begin(), pending.end());
    return groups;
  }

  /// `value`, whose dimensions are the loops `from`, transposed so that
  /// they are the loops `to`. A transpose that moves only loops of size 1
  /// is a reshape: collapsed to the other loops, then expanded.
  Value transposeLoops(Value value, ArrayRef<unsigned> from,
                       ArrayRef<unsigned> to) {
    SmallVector<int64_t> perm;
    SmallVector<OpFoldResult> shape;
    for (unsigned l : to) {
      perm.push_back(position(from, l));
      shape.push_back(sizes[l]);
    }
    auto nonUnit = [&](ArrayRef<unsigned> loops) {
      return llvm::to_vector(llvm::make_filter_range(
          loops, [&](unsigned l) { return !isUnit(l); }));
    };
    SmallVector<unsigned> kept = nonUnit(from);
    if (!kept.empty() && kept == nonUnit(to)) {
      Value collapsed = tensor::CollapseShapeOp::create(rewriter, loc, value,
                                                        unitGroups(from));
      SmallVector<int64_t> staticShape;
      for (OpFoldResult size : shape) {
        std::optional<int64_t> c = getConstantIntValue(size);
        staticShape.push_back(c ? *c : ShapedType::kDynamic);
      }
      return tensor::ExpandShapeOp::create(
          rewriter, loc,
          RankedTensorType::get(staticShape, rewriter.getF32Type()), collapsed,
          unitGroups(to), shape);
    }
    Value empty =
        tensor::EmptyOp::create(rewriter, loc, shape, rewriter.getF32Type());
    return linalg::TransposeOp::create(rewriter, loc, value, empty, perm)
        ->getResult(0);
  }

  /// An operand laid out as `groups` (each a list of loops), in that order
  /// or the order `alt` of the same groups: transposed to `groups` if it is
  /// in neither, then collapsed to one dimension per group and given a
  /// leading unit dimension when there is no batch. Sets `isAlt`.
  Value normalize(Value operand, ArrayRef<unsigned> current,
                  ArrayRef<SmallVector<unsigned>> groups,
                  ArrayRef<SmallVector<unsigned>> alt, bool &isAlt) {
    SmallVector<ArrayRef<unsigned>> groupRefs(groups.begin(), groups.end());
    SmallVector<ArrayRef<unsigned>> altRefs(alt.begin(), alt.end());
    SmallVector<unsigned> want = concat(groupRefs);
    SmallVector<SmallVector<unsigned>> layout(groups.begin(), groups.end());
    isAlt = false;
    if (!alt.empty() && concat(altRefs) == ArrayRef<unsigned>(current)) {
      isAlt = true;
      layout.assign(alt.begin(), alt.end());
    } else if (want != ArrayRef<unsigned>(current)) {
      // A copy is needed: into the layout that keeps the operand's
      // innermost loop innermost, so that it copies contiguous runs.
      SmallVector<unsigned> altLoops = concat(altRefs);
      if (!alt.empty() && !current.empty() && want.back() != current.back() &&
          altLoops.back() == current.back()) {
        isAlt = true;
        layout.assign(alt.begin(), alt.end());
        operand = transposeLoops(operand, current, altLoops);
      } else {
        operand = transposeLoops(operand, current, want);
      }
    }
    return collapseToGroups(operand, layout);
  }

  /// `operand`, laid out as `layout`, with one dimension per non-empty
  /// group and a leading unit batch when there is no batch.
  Value collapseToGroups(Value operand,
                         ArrayRef<SmallVector<unsigned>> layout) {
    SmallVector<ReassociationIndices> reassociation;
    int64_t dim = 0;
    for (const SmallVector<unsigned> &g : layout) {
      if (g.empty())
        continue;
      ReassociationIndices indices;
      for (size_t i = 0; i < g.size(); ++i)
        indices.push_back(dim++);
      reassociation.push_back(indices);
    }
    if (reassociation.size() !=
        (size_t)cast<RankedTensorType>(operand.getType()).getRank())
      operand = tensor::CollapseShapeOp::create(rewriter, loc, operand,
                                                reassociation);
    if (!c.batch.empty())
      return operand;
    auto type = cast<RankedTensorType>(operand.getType());
    SmallVector<int64_t> shape{1};
    shape.append(type.getShape().begin(), type.getShape().end());
    SmallVector<OpFoldResult> outShape{rewriter.getIndexAttr(1)};
    for (int64_t d = 0; d < type.getRank(); ++d)
      outShape.push_back(tensor::getMixedSize(rewriter, loc, operand, d));
    return tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get(shape, rewriter.getF32Type()),
        operand, {{0, 1}, {2}}, outShape);
  }

  /// A causal mask: the row of the normal form merges M loops with the
  /// query loop among them, so its index is at least the query's; with the
  /// key the only N (or K) loop, the triangle column <= row holds every
  /// element the mask keeps.
  void markTriangles(linalg::BatchMatmulOp bmm) {
    if (c.n.size() == 1 && llvm::any_of(c.m, [&](unsigned s) {
          return unreadAbove(op->getResult(0), position(c.out, s),
                             position(c.out, c.n[0]));
        }))
      bmm->setAttr(gptq::kLowerResultAttr, rewriter.getUnitAttr());
    if (c.k.size() == 1 && llvm::any_of(c.m, [&](unsigned s) {
          return zeroAbove(op->getOperand(0), position(c.lhs, s),
                           position(c.lhs, c.k[0]));
        }))
      bmm->setAttr(gptq::kLowerLhsAttr, rewriter.getUnitAttr());
  }

  /// Back to the op's layout: [B, M, N] expanded to the loops of each
  /// class, then transposed to the output's order.
  Value restoreLayout(Value result) {
    SmallVector<unsigned> normalOut = concat({c.batch, c.m, c.n});
    SmallVector<ReassociationIndices> reassociation;
    SmallVector<int64_t> shape;
    SmallVector<OpFoldResult> mixed;
    int64_t dim = 0;
    auto addGroup = [&](ArrayRef<unsigned> g) {
      ReassociationIndices indices;
      for (unsigned l : g) {
        indices.push_back(dim++);
        mixed.push_back(sizes[l]);
        std::optional<int64_t> s = getConstantIntValue(sizes[l]);
        shape.push_back(s ? *s : ShapedType::kDynamic);
      }
      return indices;
    };
    if (c.batch.empty()) {
      // The unit batch dimension goes first (an expansion that keeps it and
      // a collapse that drops it afterwards would be equivalent).
      result = tensor::CollapseShapeOp::create(
          rewriter, loc, result, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
    } else {
      reassociation.push_back(addGroup(c.batch));
    }
    reassociation.push_back(addGroup(c.m));
    reassociation.push_back(addGroup(c.n));
    auto expandedType = RankedTensorType::get(shape, rewriter.getF32Type());
    if (expandedType != result.getType())
      result = expand(result, expandedType, reassociation, mixed);
    if (normalOut != ArrayRef<unsigned>(c.out))
      result = transposeLoops(result, normalOut, c.out);
    if (result.getType() != op->getResult(0).getType())
      result = tensor::CastOp::create(rewriter, loc, op->getResult(0).getType(),
                                      result);
    return result;
  }

  /// `result` expanded to `type`. Two dynamic sizes from one (the batch
  /// and sequence of a model's activations) make a tensor.reshape:
  /// upstream's expand-strided-metadata cannot expand such a
  /// memref.expand_shape.
  Value expand(Value result, RankedTensorType type,
               ArrayRef<ReassociationIndices> reassociation,
               ArrayRef<OpFoldResult> mixed) {
    bool splitsDynamic = llvm::any_of(reassociation, [&](const auto &g) {
      return llvm::count_if(g, [&](int64_t d) {
               return ShapedType::isDynamic(type.getDimSize(d));
             }) > 1;
    });
    if (!splitsDynamic)
      return tensor::ExpandShapeOp::create(rewriter, loc, type, result,
                                           reassociation, mixed);
    SmallVector<Value> extents;
    for (OpFoldResult size : mixed)
      extents.push_back(getValueOrCreateConstantIndexOp(rewriter, loc, size));
    Value shapeTensor = tensor::FromElementsOp::create(rewriter, loc, extents);
    return tensor::ReshapeOp::create(rewriter, loc, type, result, shapeTensor);
  }

  PatternRewriter &rewriter;
  linalg::LinalgOp op;
  Location loc;
  LoopClasses c;
  SmallVector<OpFoldResult> sizes;
};

struct NormalizeContraction : OpInterfaceRewritePattern<linalg::LinalgOp> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;

  LogicalResult matchAndRewrite(linalg::LinalgOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<LoopClasses> loops = matchContraction(op);
    if (!loops)
      return failure();
    Value result = NormalFormBuilder(rewriter, op, std::move(*loops)).build();
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct GPTQNormalizeContractionsPass
    : gptq::impl::GPTQNormalizeContractionsBase<GPTQNormalizeContractionsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<NormalizeContraction>(&getContext());
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
  }
};
} // namespace
