//===- GPTQOps.cpp - GPTQ operations --------------------------------------===//

#include "gptq/Dialect/GPTQ/IR/GPTQ.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::gptq;

namespace {
/// Checks that two sizes agree where both are static.
LogicalResult checkSize(Operation *op, StringRef what, int64_t expected,
                        int64_t found) {
  if (ShapedType::isDynamic(expected) || ShapedType::isDynamic(found) ||
      expected == found)
    return success();
  return op->emitOpError() << "expected " << what << " to be " << expected
                           << ", found " << found;
}

int64_t dim(Value v, unsigned i) {
  return cast<RankedTensorType>(v.getType()).getDimSize(i);
}

LogicalResult checkSquare(Operation *op, StringRef name, Value v) {
  return checkSize(op, (name + " column count (square matrix)").str(),
                   dim(v, 0), dim(v, 1));
}

/// Number of groups for `cols` columns, or dynamic when `cols` is (and the
/// count depends on it).
int64_t numGroups(ConfigAttr config, int64_t cols) {
  if (ShapedType::isDynamic(cols) && config.getGroupSize() >= 0)
    return ShapedType::kDynamic;
  return config.getNumGroups(cols);
}

/// Checks a constant column-count operand: not negative, and equal to the
/// static size `cols` it describes.
LogicalResult checkColumnCount(Operation *op, Value columns, StringRef what,
                               int64_t cols) {
  APInt value;
  if (!matchPattern(columns, m_ConstantInt(&value)))
    return success();
  if (value.isNegative())
    return op->emitOpError() << "expected a non-negative column count, found "
                             << value.getSExtValue();
  return checkSize(op, what, value.getSExtValue(), cols);
}

/// Rows of the grids equal the rows of the weights, columns the groups.
LogicalResult checkGrid(Operation *op, StringRef name, Value grid, int64_t rows,
                        int64_t groups) {
  if (failed(checkSize(op, (name + " rows").str(), rows, dim(grid, 0))))
    return failure();
  return checkSize(op, (name + " columns (one per group)").str(), groups,
                   dim(grid, 1));
}
} // namespace

LogicalResult HessianAccumulateOp::verify() {
  if (failed(checkSquare(*this, "hessian", getHessian())))
    return failure();
  auto inputType = cast<RankedTensorType>(getInput().getType());
  return checkSize(*this, "input feature count (hessian size)",
                   dim(getHessian(), 0),
                   inputType.getDimSize(inputType.getRank() - 1));
}

LogicalResult DampedCholeskyOp::verify() {
  return checkSquare(*this, "hessian", getHessian());
}

LogicalResult ActOrderOp::verify() {
  if (failed(checkSquare(*this, "hessian", getHessian())))
    return failure();
  return checkSize(*this, "permutation length (hessian size)",
                   dim(getHessian(), 0), dim(getPerm(), 0));
}

LogicalResult PermuteOp::verify() {
  auto type = cast<RankedTensorType>(getSource().getType());
  ArrayRef<int64_t> dims = getDims();
  if (dims.empty())
    return emitOpError("expected at least one dimension to permute");
  llvm::SmallSet<int64_t, 4> seen;
  for (int64_t d : dims) {
    if (d < 0 || d >= type.getRank())
      return emitOpError() << "expected dimensions in [0, " << type.getRank()
                           << "), found " << d;
    if (!seen.insert(d).second)
      return emitOpError() << "expected distinct dimensions, found " << d
                           << " twice";
    if (failed(checkSize(
            *this,
            ("size of permuted dimension " + Twine(d) + " (permutation length)")
                .str(),
            dim(getPerm(), 0), type.getDimSize(d))))
      return failure();
  }
  return success();
}

OpFoldResult PermuteOp::fold(FoldAdaptor) {
  // permute(permute(x, p, dims), p, dims, inverse) = x, either way round.
  auto inner = getSource().getDefiningOp<PermuteOp>();
  if (!inner || inner.getPerm() != getPerm() || inner.getDims() != getDims() ||
      inner.getInverse() == getInverse() ||
      inner.getSource().getType() != getType())
    return {};
  return inner.getSource();
}

LogicalResult MaskDeadInputsOp::verify() {
  if (failed(checkSquare(*this, "hessian", getHessian())))
    return failure();
  return checkSize(*this, "weight columns (hessian size)", dim(getHessian(), 0),
                   dim(getWeight(), 1));
}

LogicalResult GridOp::verify() {
  return checkGrid(*this, "scales", getScales(), dim(getWeight(), 0),
                   numGroups(getConfig(), dim(getWeight(), 1)));
}

LogicalResult QuantizeBlocksOp::verify() {
  Value w = getWeight();
  if (failed(checkSquare(*this, "factor", getFactor())) ||
      failed(checkSize(*this, "weight columns (factor size)",
                       dim(getFactor(), 0), dim(w, 1))) ||
      failed(checkSize(*this, "codes rows", dim(w, 0), dim(getCodes(), 0))) ||
      failed(checkSize(*this, "codes columns", dim(w, 1), dim(getCodes(), 1))))
    return failure();
  bool hasScales = static_cast<bool>(getScales());
  if (hasScales != static_cast<bool>(getZeros()) ||
      hasScales != static_cast<bool>(getGroupMap()))
    return emitOpError("expected scales, zeros and group map together");
  if (!hasScales) {
    ConfigAttr config = getConfig();
    if (config.getGroupSize() < 0 || config.getStaticGroups())
      return emitOpError("expected grid operands: grids are computed in the "
                         "loop only for dynamic groups (group_size >= 1, no "
                         "static_groups)");
    return checkGrid(*this, "result scales", getOutScales(), dim(w, 0),
                     numGroups(config, dim(w, 1)));
  }
  if (getScales().getType() != getOutScales().getType())
    return emitOpError() << "expected result scales of type "
                         << getScales().getType() << ", found "
                         << getOutScales().getType();
  if (failed(checkSize(*this, "scales rows", dim(w, 0), dim(getScales(), 0))))
    return failure();
  return checkSize(*this, "group map length (weight columns)", dim(w, 1),
                   dim(getGroupMap(), 0));
}

LogicalResult GroupIndexOp::verify() {
  ConfigAttr config = getConfig();
  bool needsPerm = config.getActOrder() && !config.getStaticGroups() &&
                   config.getGroupSize() > 0;
  if (needsPerm && !getPerm())
    return emitOpError("expected a permutation for act-order with dynamic "
                       "groups");
  int64_t cols = dim(getGIdx(), 0);
  if (failed(checkColumnCount(*this, getColumns(), "g_idx length (columns)",
                              cols)))
    return failure();
  if (getPerm())
    return checkSize(*this, "permutation length (g_idx length)", cols,
                     dim(getPerm(), 0));
  return success();
}

LogicalResult DequantizeOp::verify() {
  Value codes = getCodes();
  if (failed(checkSize(*this, "result rows", dim(codes, 0),
                       dim(getResult(), 0))) ||
      failed(checkSize(*this, "result columns", dim(codes, 1),
                       dim(getResult(), 1))) ||
      failed(
          checkSize(*this, "scales rows", dim(codes, 0), dim(getScales(), 0))))
    return failure();
  return checkSize(*this, "g_idx length (code columns)", dim(codes, 1),
                   dim(getGIdx(), 0));
}

/// Words per row of `cols` packed codes of `bits` bits (at most 32),
/// without overflow for any column count: whole words of 32 codes, then
/// the rest.
static int64_t wordsPerRow(int64_t cols, int64_t bits) {
  if (ShapedType::isDynamic(cols))
    return ShapedType::kDynamic;
  return cols / 32 * bits + (cols % 32 * bits + 31) / 32;
}

LogicalResult PackOp::verify() {
  if (failed(checkSize(*this, "packed rows", dim(getCodes(), 0),
                       dim(getPacked(), 0))))
    return failure();
  return checkSize(*this, "packed words per row",
                   wordsPerRow(dim(getCodes(), 1), getBits()),
                   dim(getPacked(), 1));
}

LogicalResult UnpackOp::verify() {
  if (failed(checkSize(*this, "codes rows", dim(getPacked(), 0),
                       dim(getCodes(), 0))) ||
      failed(checkSize(*this, "packed words per row",
                       wordsPerRow(dim(getCodes(), 1), getBits()),
                       dim(getPacked(), 1))))
    return failure();
  return checkColumnCount(*this, getColumns(), "codes columns",
                          dim(getCodes(), 1));
}

LogicalResult QuantizeLayerOp::verify() {
  Value w = getWeight();
  if (failed(checkSquare(*this, "hessian", getHessian())) ||
      failed(checkSize(*this, "weight columns (hessian size)",
                       dim(getHessian(), 0), dim(w, 1))) ||
      failed(checkSize(*this, "codes rows", dim(w, 0), dim(getCodes(), 0))) ||
      failed(
          checkSize(*this, "codes columns", dim(w, 1), dim(getCodes(), 1))) ||
      failed(checkGrid(*this, "scales", getScales(), dim(w, 0),
                       numGroups(getConfig(), dim(w, 1)))))
    return failure();
  return checkSize(*this, "g_idx length (weight columns)", dim(w, 1),
                   dim(getGIdx(), 0));
}

#define GET_OP_CLASSES
#include "gptq/Dialect/GPTQ/IR/GPTQOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Result shapes (ReifyRankedShapedTypeOpInterface)
//===----------------------------------------------------------------------===//

namespace {
/// Size `d` of `v`: a constant when static, else tensor.dim.
OpFoldResult sizeOf(OpBuilder &b, Location loc, Value v, int64_t d) {
  return tensor::getMixedSize(b, loc, v, d);
}

/// ceil(size / divisor), folded when `size` is a constant.
OpFoldResult ceilDiv(OpBuilder &b, Location loc, OpFoldResult size,
                     int64_t divisor) {
  if (std::optional<int64_t> c = getConstantIntValue(size))
    return b.getIndexAttr((*c + divisor - 1) / divisor);
  Value v = getValueOrCreateConstantIndexOp(b, loc, size);
  return arith::CeilDivUIOp::create(
             b, loc, v, arith::ConstantIndexOp::create(b, loc, divisor))
      .getResult();
}

/// The grid count of `config` for `cols` columns: 1 for one group per row.
OpFoldResult groupsOf(OpBuilder &b, Location loc, ConfigAttr config,
                      OpFoldResult cols) {
  if (config.getGroupSize() < 0)
    return b.getIndexAttr(1);
  return ceilDiv(b, loc, cols, config.getGroupSize());
}

/// The shape of each of `v`'s dimensions.
SmallVector<OpFoldResult> shapeOf(OpBuilder &b, Location loc, Value v) {
  return tensor::getMixedSizes(b, loc, v);
}
} // namespace

LogicalResult HessianAccumulateOp::reifyResultShapes(
    OpBuilder &b, ReifiedRankedShapedTypeDims &shapes) {
  shapes = {shapeOf(b, getLoc(), getHessian()), {}};
  return success();
}

LogicalResult DampedCholeskyOp::reifyResultShapes(
    OpBuilder &b, ReifiedRankedShapedTypeDims &shapes) {
  shapes = {shapeOf(b, getLoc(), getHessian()), {}};
  return success();
}

LogicalResult
ActOrderOp::reifyResultShapes(OpBuilder &b,
                              ReifiedRankedShapedTypeDims &shapes) {
  shapes = {{sizeOf(b, getLoc(), getHessian(), 0)}};
  return success();
}

LogicalResult PermuteOp::reifyResultShapes(OpBuilder &b,
                                           ReifiedRankedShapedTypeDims &shapes) {
  shapes = {shapeOf(b, getLoc(), getSource())};
  return success();
}

LogicalResult MaskDeadInputsOp::reifyResultShapes(
    OpBuilder &b, ReifiedRankedShapedTypeDims &shapes) {
  shapes = {shapeOf(b, getLoc(), getWeight())};
  return success();
}

LogicalResult GridOp::reifyResultShapes(OpBuilder &b,
                                        ReifiedRankedShapedTypeDims &shapes) {
  Location loc = getLoc();
  SmallVector<OpFoldResult> grid = {
      sizeOf(b, loc, getWeight(), 0),
      groupsOf(b, loc, getConfig(), sizeOf(b, loc, getWeight(), 1))};
  shapes = {grid, grid};
  return success();
}

LogicalResult QuantizeBlocksOp::reifyResultShapes(
    OpBuilder &b, ReifiedRankedShapedTypeDims &shapes) {
  Location loc = getLoc();
  // Given grids come back as they were; otherwise rows x groups.
  SmallVector<OpFoldResult> grid =
      getScales() ? shapeOf(b, loc, getScales())
                  : SmallVector<OpFoldResult>{
                        sizeOf(b, loc, getWeight(), 0),
                        groupsOf(b, loc, getConfig(),
                                 sizeOf(b, loc, getWeight(), 1))};
  shapes = {shapeOf(b, loc, getWeight()), grid, grid, {}};
  return success();
}

LogicalResult
GroupIndexOp::reifyResultShapes(OpBuilder &b,
                                ReifiedRankedShapedTypeDims &shapes) {
  shapes = {{OpFoldResult(getColumns())}};
  if (std::optional<int64_t> c = getConstantIntValue(getColumns()))
    shapes[0][0] = b.getIndexAttr(*c);
  return success();
}

LogicalResult
DequantizeOp::reifyResultShapes(OpBuilder &b,
                                ReifiedRankedShapedTypeDims &shapes) {
  shapes = {shapeOf(b, getLoc(), getCodes())};
  return success();
}

LogicalResult PackOp::reifyResultShapes(OpBuilder &b,
                                        ReifiedRankedShapedTypeDims &shapes) {
  Location loc = getLoc();
  OpFoldResult cols = sizeOf(b, loc, getCodes(), 1);
  OpFoldResult words;
  if (std::optional<int64_t> c = getConstantIntValue(cols)) {
    words = b.getIndexAttr(wordsPerRow(*c, getBits()));
  } else {
    // ceil(cols * bits / 32).
    Value bits = arith::MulIOp::create(
        b, loc, getValueOrCreateConstantIndexOp(b, loc, cols),
        arith::ConstantIndexOp::create(b, loc, getBits()));
    words = ceilDiv(b, loc, OpFoldResult(bits), 32);
  }
  shapes = {{sizeOf(b, loc, getCodes(), 0), words}};
  return success();
}

LogicalResult UnpackOp::reifyResultShapes(OpBuilder &b,
                                          ReifiedRankedShapedTypeDims &shapes) {
  OpFoldResult cols = getColumns();
  if (std::optional<int64_t> c = getConstantIntValue(getColumns()))
    cols = b.getIndexAttr(*c);
  shapes = {{sizeOf(b, getLoc(), getPacked(), 0), cols}};
  return success();
}

LogicalResult QuantizeLayerOp::reifyResultShapes(
    OpBuilder &b, ReifiedRankedShapedTypeDims &shapes) {
  Location loc = getLoc();
  SmallVector<OpFoldResult> grid = {
      sizeOf(b, loc, getWeight(), 0),
      groupsOf(b, loc, getConfig(), sizeOf(b, loc, getWeight(), 1))};
  shapes = {shapeOf(b, loc, getWeight()), grid, grid,
            {sizeOf(b, loc, getWeight(), 1)}, {}, {}};
  return success();
}

//===----------------------------------------------------------------------===//
// Tiling (TilingInterface) of gptq.dequantize
//===----------------------------------------------------------------------===//

SmallVector<utils::IteratorType> DequantizeOp::getLoopIteratorTypes() {
  return {utils::IteratorType::parallel, utils::IteratorType::parallel};
}

SmallVector<Range> DequantizeOp::getIterationDomain(OpBuilder &b) {
  Location loc = getLoc();
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  return {Range{zero, sizeOf(b, loc, getCodes(), 0), one},
          Range{zero, sizeOf(b, loc, getCodes(), 1), one}};
}

FailureOr<TilingResult>
DequantizeOp::getTiledImplementation(OpBuilder &b,
                                     ArrayRef<OpFoldResult> offsets,
                                     ArrayRef<OpFoldResult> sizes) {
  Location loc = getLoc();
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  SmallVector<OpFoldResult> unit2 = {one, one};
  // Codes: the tile; grids: its rows, every group; g_idx: its columns.
  auto codes =
      tensor::ExtractSliceOp::create(b, loc, getCodes(), offsets, sizes, unit2);
  SmallVector<OpFoldResult> gridOffsets = {offsets[0], zero};
  SmallVector<OpFoldResult> gridSizes = {sizes[0],
                                         sizeOf(b, loc, getScales(), 1)};
  auto scales = tensor::ExtractSliceOp::create(b, loc, getScales(), gridOffsets,
                                               gridSizes, unit2);
  auto zeros = tensor::ExtractSliceOp::create(b, loc, getZeros(), gridOffsets,
                                              gridSizes, unit2);
  auto gIdx = tensor::ExtractSliceOp::create(
      b, loc, getGIdx(), ArrayRef<OpFoldResult>{offsets[1]},
      ArrayRef<OpFoldResult>{sizes[1]}, ArrayRef<OpFoldResult>{one});
  SmallVector<int64_t> staticSizes;
  SmallVector<Value> dynamicSizes;
  dispatchIndexOpFoldResults(sizes, dynamicSizes, staticSizes);
  auto type = RankedTensorType::get(staticSizes, b.getF32Type());
  auto tiled = DequantizeOp::create(b, loc, type, codes, scales, zeros, gIdx);
  return TilingResult{{tiled},
                      {tiled.getResult()},
                      {codes, scales, zeros, gIdx}};
}

/// The iteration domain is the result's index space: a tile of one is the
/// same tile of the other.
static LogicalResult sameTile(ArrayRef<OpFoldResult> offsets,
                              ArrayRef<OpFoldResult> sizes,
                              SmallVectorImpl<OpFoldResult> &toOffsets,
                              SmallVectorImpl<OpFoldResult> &toSizes) {
  toOffsets.assign(offsets.begin(), offsets.end());
  toSizes.assign(sizes.begin(), sizes.end());
  return success();
}

LogicalResult DequantizeOp::getResultTilePosition(
    OpBuilder &, unsigned, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  return sameTile(offsets, sizes, resultOffsets, resultSizes);
}

LogicalResult DequantizeOp::getIterationDomainTileFromResultTile(
    OpBuilder &, unsigned, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, SmallVectorImpl<OpFoldResult> &domainOffsets,
    SmallVectorImpl<OpFoldResult> &domainSizes) {
  return sameTile(offsets, sizes, domainOffsets, domainSizes);
}

FailureOr<TilingResult>
DequantizeOp::generateResultTileValue(OpBuilder &b, unsigned,
                                      ArrayRef<OpFoldResult> offsets,
                                      ArrayRef<OpFoldResult> sizes) {
  return getTiledImplementation(b, offsets, sizes);
}

Value mlir::gptq::buildMaxQ(OpBuilder &b, Location loc, ConfigAttr config,
                            Value bits) {
  if (!bits)
    return arith::ConstantOp::create(
        b, loc, b.getF32FloatAttr(static_cast<double>(config.getMaxQ())));
  Value one = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 1);
  Value codes = arith::ShLIOp::create(b, loc, one, bits);
  Value maxq = arith::SubIOp::create(b, loc, codes, one);
  return arith::SIToFPOp::create(b, loc, b.getF32Type(), maxq);
}
