//===- RuntimeChecks.cpp - Run-time checks of gptq ops --------------------===//
//
// Before each gptq op, a cf.assert for every shape relation of its verifier
// that involves a dynamic size, and for the index data the op reads. A
// relation between two static sizes is the verifier's; a dynamic result
// size is made from the operands by the lowering, so it holds by
// construction, while a static result size must match the operands.
//
//===----------------------------------------------------------------------===//

#include "gptq/Conversion/Passes.h"
#include "gptq/Dialect/GPTQ/IR/GPTQ.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

#include <algorithm>

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQINSERTRUNTIMECHECKS
#include "gptq/Conversion/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;
using namespace mlir::gptq;

namespace {
/// Emits the checks of one op, before it.
class Checker {
public:
  explicit Checker(Operation *op)
      : op(op), b(op), loc(op->getLoc()),
        name(op->getName().getStringRef().str()) {}

  /// `cond` must hold; `relation` says what failed.
  void check(Value cond, const Twine &relation) {
    cf::AssertOp::create(b, loc, cond, (name + ": " + relation).str());
  }

  /// Size `i` of the operand `v`: static as an attribute, else tensor.dim.
  OpFoldResult size(Value v, int64_t i) {
    auto type = cast<RankedTensorType>(v.getType());
    if (!type.isDynamicDim(i))
      return b.getIndexAttr(type.getDimSize(i));
    return tensor::DimOp::create(b, loc, v, i).getResult();
  }

  /// Size `i` of the result `v` when it is static; null when it is dynamic
  /// (made from the operands, so it holds by construction).
  OpFoldResult resultSize(Value v, int64_t i) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.isDynamicDim(i))
      return {};
    return b.getIndexAttr(type.getDimSize(i));
  }

  /// `lhs == rhs`, unless one is unknown (a dynamic result size) or both
  /// are static and `verified` (the verifier checks them).
  void equal(OpFoldResult lhs, OpFoldResult rhs, const Twine &relation,
             bool verified = true) {
    if (!lhs || !rhs ||
        (verified && isa<Attribute>(lhs) && isa<Attribute>(rhs)))
      return;
    Value eq = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                     value(lhs), value(rhs));
    check(eq, "expected " + relation);
  }

  void square(Value matrix, StringRef what) {
    equal(size(matrix, 0), size(matrix, 1), "a square " + what);
  }

  /// Every entry of the 1-D integer tensor `v` is in [0, upper).
  Value allBelow(Value v, Value upper) {
    Type i64 = b.getI64Type();
    Value upper64 = arith::IndexCastOp::create(b, loc, i64, upper);
    Value n = tensor::DimOp::create(b, loc, v, 0);
    auto loop = scf::ForOp::create(
        b, loc, constant(0), n, constant(1), ValueRange{boolConstant(true)},
        [&](OpBuilder &nb, Location nloc, Value j, ValueRange acc) {
          Value entry =
              widen(nb, nloc, tensor::ExtractOp::create(nb, nloc, v, j));
          // Unsigned: negative entries are out of range too.
          Value in = arith::CmpIOp::create(nb, nloc, arith::CmpIPredicate::ult,
                                           entry, upper64);
          scf::YieldOp::create(
              nb, nloc,
              ValueRange{arith::AndIOp::create(nb, nloc, acc[0], in)});
        });
    return loop.getResult(0);
  }

  /// Checks that `perm` holds each of 0, ..., n-1 once (n its length): one
  /// pass that marks the entries seen.
  void permutation(Value perm, const Twine &what) {
    Value n = tensor::DimOp::create(b, loc, perm, 0);
    Type i8 = b.getI8Type();
    Value empty =
        tensor::EmptyOp::create(b, loc, ArrayRef<OpFoldResult>{n}, i8);
    Value seen0 = linalg::FillOp::create(b, loc,
                                         ValueRange{arith::ConstantOp::create(
                                             b, loc, b.getI8IntegerAttr(0))},
                                         ValueRange{empty})
                      .getResult(0);
    Value n64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), n);
    auto loop = scf::ForOp::create(
        b, loc, constant(0), n, constant(1),
        ValueRange{seen0, boolConstant(true), boolConstant(true)},
        [&](OpBuilder &nb, Location nloc, Value j, ValueRange acc) {
          Value entry =
              widen(nb, nloc, tensor::ExtractOp::create(nb, nloc, perm, j));
          Value in = arith::CmpIOp::create(nb, nloc, arith::CmpIPredicate::ult,
                                           entry, n64);
          Value zero64 =
              arith::ConstantOp::create(nb, nloc, nb.getI64IntegerAttr(0));
          Value at = arith::IndexCastOp::create(
              nb, nloc, nb.getIndexType(),
              arith::SelectOp::create(nb, nloc, in, entry, zero64));
          Value mark = tensor::ExtractOp::create(nb, nloc, acc[0], at);
          Value zero8 =
              arith::ConstantOp::create(nb, nloc, nb.getI8IntegerAttr(0));
          Value one8 =
              arith::ConstantOp::create(nb, nloc, nb.getI8IntegerAttr(1));
          Value fresh = arith::CmpIOp::create(
              nb, nloc, arith::CmpIPredicate::eq, mark, zero8);
          Value newMark = arith::SelectOp::create(nb, nloc, in, one8, mark);
          Value seen = tensor::InsertOp::create(nb, nloc, newMark, acc[0], at);
          Value inRange = arith::AndIOp::create(nb, nloc, acc[1], in);
          Value distinct = arith::AndIOp::create(
              nb, nloc, acc[2],
              arith::OrIOp::create(
                  nb, nloc, fresh,
                  arith::XOrIOp::create(nb, nloc, in,
                                        arith::ConstantOp::create(
                                            nb, nloc, nb.getBoolAttr(true)))));
          scf::YieldOp::create(nb, nloc, ValueRange{seen, inRange, distinct});
        });
    check(loop.getResult(1), what + " entry out of range [0, n)");
    check(loop.getResult(2), what + " entry repeated");
  }

  /// Grid groups of `cols` columns as the lowering makes them: groups of
  /// group_size columns, or one group of all columns for group_size = -1.
  OpFoldResult groups(ConfigAttr config, OpFoldResult cols) {
    if (auto attr = dyn_cast<Attribute>(cols)) {
      int64_t c = cast<IntegerAttr>(attr).getInt();
      int64_t gs = config.getGroupSize() > 0 ? config.getGroupSize()
                                             : std::max<int64_t>(c, 1);
      return b.getIndexAttr((c + gs - 1) / gs);
    }
    Value c = cast<Value>(cols);
    Value gs = config.getGroupSize() > 0
                   ? constant(config.getGroupSize())
                   : arith::MaxSIOp::create(b, loc, c, constant(1)).getResult();
    return arith::CeilDivSIOp::create(b, loc, c, gs).getResult();
  }

  Value value(OpFoldResult v) {
    if (auto attr = dyn_cast<Attribute>(v))
      return constant(cast<IntegerAttr>(attr).getInt());
    return cast<Value>(v);
  }
  Value constant(int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  }
  /// A run-time width, when given, lies in [2, 8].
  void bits(Value bits) {
    if (!bits)
      return;
    auto within = [&](arith::CmpIPredicate predicate, int64_t bound) {
      return arith::CmpIOp::create(
          b, loc, predicate, bits,
          arith::ConstantIntOp::create(b, loc, b.getI64Type(), bound));
    };
    Value atLeast = within(arith::CmpIPredicate::sge, 2);
    Value atMost = within(arith::CmpIPredicate::sle, 8);
    check(arith::AndIOp::create(b, loc, atLeast, atMost),
          "expected bits in [2, 8]");
  }
  Value boolConstant(bool v) {
    return arith::ConstantOp::create(b, loc, b.getBoolAttr(v));
  }

  Operation *op;
  OpBuilder b;
  Location loc;

private:
  /// An index entry as i64.
  static Value widen(OpBuilder &nb, Location nloc, Value entry) {
    if (entry.getType().isInteger(64))
      return entry;
    return arith::ExtSIOp::create(nb, nloc, nb.getI64Type(), entry);
  }

  std::string name;
};

/// Whether `perm` is a permutation by construction.
bool isKnownPermutation(Value perm) {
  return perm && perm.getDefiningOp<ActOrderOp>();
}

/// Rows and groups of a grid result, against the weight's.
void checkGridResult(Checker &c, Value grid, StringRef name, Value weight,
                     ConfigAttr config) {
  c.equal(c.resultSize(grid, 0), c.size(weight, 0),
          name + " rows to equal the weight rows");
  if (OpFoldResult groups = c.resultSize(grid, 1))
    c.equal(groups, c.groups(config, c.size(weight, 1)),
            name + " columns to equal the number of groups");
}

/// The checks of `scales` and `zeros`, read by index with `groupIndex`:
/// `rows` (named `rowsName`) rows, one index per `cols` (`colsName`).
void checkIndexedGrids(Checker &c, Value scales, Value zeros, Value groupIndex,
                       StringRef indexName, StringRef rowsName,
                       OpFoldResult rows, StringRef colsName,
                       OpFoldResult cols) {
  c.equal(c.size(scales, 0), rows, "scales rows to equal the " + rowsName);
  // gptq.dequantize's types make zeros and scales alike; gptq.quantize_blocks'
  // verifier does not compare them.
  bool verified = isa<DequantizeOp>(c.op);
  c.equal(c.size(zeros, 0), c.size(scales, 0),
          "zeros rows to equal the scales rows", verified);
  c.equal(c.size(zeros, 1), c.size(scales, 1),
          "zeros columns to equal the scales columns", verified);
  c.equal(c.size(groupIndex, 0), cols,
          indexName + " length to equal the " + colsName);
  Value groups = c.value(c.size(scales, 1));
  c.check(c.allBelow(groupIndex, groups),
          indexName + " entry out of range [0, groups)");
}

/// A layer's weight against its square matrix (the Hessian or its factor)
/// and its codes.
void checkLayer(Checker &c, Value weight, Value square, StringRef squareName,
                Value codes) {
  c.square(square, squareName);
  c.equal(c.size(weight, 1), c.size(square, 0),
          "the weight columns to equal the " + squareName + " size");
  c.equal(c.resultSize(codes, 0), c.size(weight, 0),
          "codes rows to equal the weight rows");
  c.equal(c.resultSize(codes, 1), c.size(weight, 1),
          "codes columns to equal the weight columns");
}

void insertChecks(Operation *op) {
  Checker c(op);
  if (auto acc = dyn_cast<HessianAccumulateOp>(op)) {
    c.square(acc.getHessian(), "hessian");
    auto inputType = cast<RankedTensorType>(acc.getInput().getType());
    c.equal(c.size(acc.getInput(), inputType.getRank() - 1),
            c.size(acc.getHessian(), 0),
            "the input feature count to equal the hessian size");
  } else if (auto chol = dyn_cast<DampedCholeskyOp>(op)) {
    c.square(chol.getHessian(), "hessian");
  } else if (auto order = dyn_cast<ActOrderOp>(op)) {
    c.square(order.getHessian(), "hessian");
    c.equal(c.resultSize(order.getPerm(), 0), c.size(order.getHessian(), 0),
            "the permutation length to equal the hessian size");
  } else if (auto permute = dyn_cast<PermuteOp>(op)) {
    for (int64_t d : permute.getDims())
      c.equal(c.size(permute.getSource(), d), c.size(permute.getPerm(), 0),
              "the size of permuted dimension " + Twine(d) +
                  " to equal the permutation length");
    if (!isKnownPermutation(permute.getPerm()))
      c.permutation(permute.getPerm(), "permutation");
  } else if (auto mask = dyn_cast<MaskDeadInputsOp>(op)) {
    c.square(mask.getHessian(), "hessian");
    c.equal(c.size(mask.getWeight(), 1), c.size(mask.getHessian(), 0),
            "the weight columns to equal the hessian size");
  } else if (auto grid = dyn_cast<GridOp>(op)) {
    c.bits(grid.getBits());
    checkGridResult(c, grid.getScales(), "scales", grid.getWeight(),
                    grid.getConfig());
  } else if (auto blocks = dyn_cast<QuantizeBlocksOp>(op)) {
    c.bits(blocks.getBits());
    Value w = blocks.getWeight();
    checkLayer(c, w, blocks.getFactor(), "factor", blocks.getCodes());
    if (blocks.getScales())
      checkIndexedGrids(c, blocks.getScales(), blocks.getZeros(),
                        blocks.getGroupMap(), "group map", "weight rows",
                        c.size(w, 0), "weight columns", c.size(w, 1));
    else
      checkGridResult(c, blocks.getOutScales(), "result scales", w,
                      blocks.getConfig());
  } else if (auto index = dyn_cast<GroupIndexOp>(op)) {
    Value cols = index.getColumns();
    c.check(arith::CmpIOp::create(c.b, c.loc, arith::CmpIPredicate::sge, cols,
                                  c.constant(0)),
            "expected a non-negative column count");
    c.equal(c.resultSize(index.getGIdx(), 0), cols,
            "the g_idx length to equal the column count");
    if (Value perm = index.getPerm()) {
      c.equal(c.size(perm, 0), cols,
              "the permutation length to equal the column count");
      // Only act-order with dynamic groups reads the permutation.
      ConfigAttr config = index.getConfig();
      if (config.getGroupSize() > 0 && !config.getStaticGroups() &&
          !isKnownPermutation(perm))
        c.permutation(perm, "permutation");
    }
  } else if (auto deq = dyn_cast<DequantizeOp>(op)) {
    Value codes = deq.getCodes();
    c.equal(c.resultSize(deq.getResult(), 0), c.size(codes, 0),
            "result rows to equal the code rows");
    c.equal(c.resultSize(deq.getResult(), 1), c.size(codes, 1),
            "result columns to equal the code columns");
    checkIndexedGrids(c, deq.getScales(), deq.getZeros(), deq.getGIdx(),
                      "g_idx", "code rows", c.size(codes, 0), "code columns",
                      c.size(codes, 1));
  } else if (auto pack = dyn_cast<PackOp>(op)) {
    Value codes = pack.getCodes();
    c.equal(c.resultSize(pack.getPacked(), 0), c.size(codes, 0),
            "packed rows to equal the code rows");
    if (OpFoldResult words = c.resultSize(pack.getPacked(), 1)) {
      OpFoldResult cols = c.size(codes, 1);
      if (isa<Value>(cols)) {
        Value bits = c.constant(pack.getBits());
        Value needed = arith::CeilDivUIOp::create(
            c.b, c.loc,
            arith::MulIOp::create(c.b, c.loc, cast<Value>(cols), bits),
            c.constant(32));
        c.equal(words, needed,
                "packed words per row to equal ceil(columns * bits / 32)");
      }
    }
  } else if (auto unpack = dyn_cast<UnpackOp>(op)) {
    Value packed = unpack.getPacked();
    Value cols = unpack.getColumns();
    c.check(arith::CmpIOp::create(c.b, c.loc, arith::CmpIPredicate::sge, cols,
                                  c.constant(0)),
            "expected a non-negative column count");
    // ceil(cols * bits / 32) == words, with cols * bits kept from
    // overflowing by cols <= words * 32 / bits.
    Value words = c.value(c.size(packed, 1));
    Value bits = c.constant(unpack.getBits());
    Value most = arith::DivUIOp::create(
        c.b, c.loc, arith::MulIOp::create(c.b, c.loc, words, c.constant(32)),
        bits);
    Value fits = arith::CmpIOp::create(c.b, c.loc, arith::CmpIPredicate::ule,
                                       cols, most);
    Value needed = arith::CeilDivUIOp::create(
        c.b, c.loc, arith::MulIOp::create(c.b, c.loc, cols, bits),
        c.constant(32));
    Value same = arith::CmpIOp::create(c.b, c.loc, arith::CmpIPredicate::eq,
                                       needed, words);
    c.check(arith::AndIOp::create(c.b, c.loc, fits, same),
            "expected the packed words per row to equal ceil(columns * bits "
            "/ 32)");
    c.equal(c.resultSize(unpack.getCodes(), 0), c.size(packed, 0),
            "codes rows to equal the packed rows");
    c.equal(c.resultSize(unpack.getCodes(), 1), cols,
            "codes columns to equal the column count");
  } else if (auto layer = dyn_cast<QuantizeLayerOp>(op)) {
    c.bits(layer.getBits());
    Value w = layer.getWeight();
    checkLayer(c, w, layer.getHessian(), "hessian", layer.getCodes());
    checkGridResult(c, layer.getScales(), "scales", w, layer.getConfig());
    c.equal(c.resultSize(layer.getGIdx(), 0), c.size(w, 1),
            "the g_idx length to equal the weight columns");
  }
}

struct GPTQInsertRuntimeChecksPass
    : gptq::impl::GPTQInsertRuntimeChecksBase<GPTQInsertRuntimeChecksPass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<GPTQDialect>(op->getDialect()))
        ops.push_back(op);
    });
    for (Operation *op : ops)
      insertChecks(op);
  }
};
} // namespace
