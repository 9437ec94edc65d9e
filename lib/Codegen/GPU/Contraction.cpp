//===- Contraction.cpp - Matrix products that the GPU schedule tiles ------===//

#include "Contraction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;
using namespace mlir::gptq;

namespace {

/// The buffer that `v` is a view of.
Value rootBuffer(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(def))
      v = view.getViewSource();
    else if (auto cast = dyn_cast<memref::CastOp>(def))
      v = cast.getSource();
    else
      break;
  }
  return v;
}

} // namespace

/// The dimensions that `map` reads, if each result is a dimension.
std::optional<SmallVector<unsigned>> gptq::dimsOf(AffineMap map) {
  SmallVector<unsigned> dims;
  for (AffineExpr e : map.getResults()) {
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d)
      return std::nullopt;
    dims.push_back(d.getPosition());
  }
  return dims;
}

SmallVector<SmallVector<unsigned>> gptq::operandLoops(linalg::LinalgOp op) {
  SmallVector<SmallVector<unsigned>> reads;
  for (AffineMap map : op.getIndexingMapsArray())
    reads.push_back(*dimsOf(map));
  return reads;
}

SmallVector<Value> gptq::loopBounds(OpBuilder &b, Location loc,
                                    linalg::LinalgOp op,
                                    ArrayRef<SmallVector<unsigned>> reads) {
  SmallVector<Value> bounds(op.getNumLoops());
  for (OpOperand &operand : op->getOpOperands())
    for (auto [pos, d] : llvm::enumerate(reads[operand.getOperandNumber()]))
      if (!bounds[d])
        bounds[d] =
            memref::DimOp::create(b, loc, operand.get(), pos).getResult();
  return bounds;
}

SmallVector<Value> gptq::operandIndices(ArrayRef<unsigned> reads,
                                        ArrayRef<Value> ivs) {
  SmallVector<Value> indices;
  for (unsigned d : reads)
    indices.push_back(ivs[d]);
  return indices;
}

std::optional<Contraction> gptq::matchContraction(linalg::LinalgOp op) {
  unsigned loops = op.getNumLoops();
  if (!op.hasPureBufferSemantics() || op.hasIndexSemantics() ||
      (loops != 3 && loops != 4) || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 1)
    return std::nullopt;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  auto out = dimsOf(maps[2]);
  auto in0 = dimsOf(maps[0]);
  auto in1 = dimsOf(maps[1]);
  // Every operand reads each loop at most once, all loops but the
  // reduction reach the result.
  auto distinct = [&](const std::optional<SmallVector<unsigned>> &dims) {
    return dims && dims->size() == loops - 1 &&
           llvm::SmallDenseSet<unsigned>(dims->begin(), dims->end()).size() ==
               dims->size();
  };
  if (!distinct(out) || !distinct(in0) || !distinct(in1))
    return std::nullopt;
  Contraction c;
  std::optional<unsigned> k;
  for (unsigned d = 0; d < loops; ++d)
    if (!llvm::is_contained(*out, d))
      k = d;
  if (!k || op.getIteratorTypesArray()[*k] != utils::IteratorType::reduction ||
      !llvm::is_contained(*in0, *k) || !llvm::is_contained(*in1, *k))
    return std::nullopt;
  c.k = *k;
  // The result's loops: the batch (read by both inputs), m (by one), n (by
  // the other), in the result's order without the batch.
  SmallVector<unsigned> rowsCols;
  for (unsigned d : *out) {
    bool a = llvm::is_contained(*in0, d), b = llvm::is_contained(*in1, d);
    if (a && b) {
      if (c.batch)
        return std::nullopt;
      c.batch = d;
    } else if (a != b) {
      rowsCols.push_back(d);
    } else {
      return std::nullopt;
    }
  }
  if (rowsCols.size() != 2 || (loops == 4) != c.batch.has_value())
    return std::nullopt;
  c.m = rowsCols[0];
  c.n = rowsCols[1];
  if (llvm::is_contained(*in0, c.m) && llvm::is_contained(*in1, c.n)) {
    c.lhs = 0;
    c.rhs = 1;
  } else {
    c.lhs = 1;
    c.rhs = 0;
  }
  // Operands of one float type.
  Type element;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type || type.getMemorySpace())
      return std::nullopt;
    if (!element)
      element = type.getElementType();
    if (type.getElementType() != element || !isa<FloatType>(element))
      return std::nullopt;
  }
  return c;
}

/// The linalg.fill that sets all of `op`'s result just before it (only ops
/// without memory effects between), whose value the product can start
/// from instead of reading C: the fill is then dead, since the tiled
/// kernel stores every element of C. None where an operand may be a view
/// of the result's buffer (its elements would be the fill's).
linalg::FillOp gptq::fillBefore(linalg::LinalgOp op) {
  Value output = op.getDpsInits()[0];
  Value root = rootBuffer(output);
  for (Value input : op.getDpsInputs())
    if (rootBuffer(input) == root)
      return nullptr;
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
    if (auto fill = dyn_cast<linalg::FillOp>(prev))
      return fill.hasPureBufferSemantics() && fill.getDpsInits()[0] == output
                 ? fill
                 : nullptr;
    if (!isMemoryEffectFree(prev))
      return nullptr;
  }
  return nullptr;
}

std::optional<int> gptq::productSign(linalg::LinalgOp op,
                                     const Contraction &c) {
  Block *body = op.getBlock();
  Value lhs = body->getArgument(c.lhs), rhs = body->getArgument(c.rhs);
  Value acc = body->getArgument(2);
  if (body->getOperations().size() != 3)
    return std::nullopt;
  Value result = body->getTerminator()->getOperand(0);
  auto isProduct = [&](Value v) {
    auto mul = v.getDefiningOp<arith::MulFOp>();
    return mul && ((mul.getLhs() == lhs && mul.getRhs() == rhs) ||
                   (mul.getLhs() == rhs && mul.getRhs() == lhs));
  };
  if (auto add = result.getDefiningOp<arith::AddFOp>()) {
    if ((add.getLhs() == acc && isProduct(add.getRhs())) ||
        (add.getRhs() == acc && isProduct(add.getLhs())))
      return 1;
  } else if (auto sub = result.getDefiningOp<arith::SubFOp>()) {
    if (sub.getLhs() == acc && isProduct(sub.getRhs()))
      return -1;
  }
  return std::nullopt;
}

void gptq::stageTile(OpBuilder &b, Location loc, linalg::LinalgOp op,
                     ArrayRef<SmallVector<unsigned>> reads, ArrayRef<Value> ivs,
                     Value linear, int64_t threads, const OperandTile &tile,
                     bool zeroOutside) {
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  auto ult = [&](Value x, Value y) -> Value {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
  };
  Value source = op->getOperand(tile.operand);
  Type element = cast<MemRefType>(source.getType()).getElementType();
  bool alongInner = reads[tile.operand].back() == tile.innerDim;
  int64_t P = tile.rows, Q = tile.cols;
  for (int64_t st = 0; st < P * Q / threads; ++st) {
    Value e = arith::AddIOp::create(b, loc, linear, index(st * threads));
    Value i, j;
    if (alongInner) {
      j = arith::RemUIOp::create(b, loc, e, index(Q));
      i = arith::DivUIOp::create(b, loc, e, index(Q));
    } else {
      i = arith::RemUIOp::create(b, loc, e, index(P));
      j = arith::DivUIOp::create(b, loc, e, index(P));
    }
    Value oi = arith::AddIOp::create(b, loc, tile.outer0, i);
    Value ij = arith::AddIOp::create(b, loc, tile.inner0, j);
    Value inside = arith::AndIOp::create(b, loc, ult(oi, tile.outerSize),
                                         ult(ij, tile.innerSize));
    auto load = [&]() -> Value {
      SmallVector<Value> at(ivs);
      at[tile.outerDim] = oi;
      at[tile.innerDim] = ij;
      return memref::LoadOp::create(b, loc, source,
                                    operandIndices(reads[tile.operand], at));
    };
    if (!zeroOutside) {
      auto ifInside = scf::IfOp::create(b, loc, TypeRange{}, inside, false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifInside.thenBlock());
      memref::StoreOp::create(b, loc, load(), tile.buffer, ValueRange{i, j});
      continue;
    }
    auto value = scf::IfOp::create(b, loc, TypeRange{element}, inside, true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(value.thenBlock());
      scf::YieldOp::create(b, loc, load());
      b.setInsertionPointToStart(value.elseBlock());
      scf::YieldOp::create(
          b, loc,
          arith::ConstantOp::create(b, loc, b.getZeroAttr(element))
              .getResult());
    }
    memref::StoreOp::create(b, loc, value.getResult(0), tile.buffer,
                            ValueRange{i, j});
  }
}
