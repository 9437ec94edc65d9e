//===- QuantTypes.cpp - Quantized weights as upstream quant types ---------===//
//
// buildQuantTypesWeight writes one quantized weight with upstream quant ops
// (gptq-to-quant-types, lib/Conversion/GPTQToUpstream, applies it to every
// gptq.dequantize of constant operands).
//
//===----------------------------------------------------------------------===//

#include "gptq/Quantize/QuantTypes.h"
#include "gptq/Dialect/GPTQ/IR/GPTQ.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Quant/IR/Quant.h"
#include "mlir/Dialect/Quant/IR/QuantTypes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::gptq;

//===----------------------------------------------------------------------===//
// The quantized weight
//===----------------------------------------------------------------------===//

/// A float as a diagnostic shows it: 7.5, 0, nan.
static std::string number(float v) {
  return llvm::formatv("{0}", llvm::format("%.9g", double(v))).str();
}

namespace {
/// The start of a diagnostic about the weight.
using WeightError = function_ref<InFlightDiagnostic()>;

/// Where each column goes in the blocks of the quantized tensor, which
/// holds the groups side by side in blocks of the largest group's size.
struct BlockLayout {
  /// Each column's place: its group's block and its rank among the group's
  /// columns.
  std::vector<int64_t> pos;
  int64_t block = 0, padded = 0;
  /// Whether each column stays where it is.
  bool identity = true;
};

/// Each column's rank among its group's columns (in `layout.pos`) and the
/// size of the largest group (`layout.block`); fails on a group index out
/// of range.
LogicalResult rankColumns(const QuantizedWeight &w, BlockLayout &layout,
                          WeightError error) {
  std::vector<int64_t> count(w.groups, 0);
  layout.pos.resize(w.cols);
  for (int64_t j = 0; j < w.cols; ++j) {
    int64_t g = w.gIdx[j];
    if (g < 0 || g >= w.groups)
      return error() << "g_idx[" << j << "] = " << g << ": expected 0 to "
                     << w.groups - 1,
             failure();
    layout.pos[j] = count[g]++;
  }
  layout.block = *std::max_element(count.begin(), count.end());
  return success();
}

/// Checks that every scale is positive and finite and every zero point an
/// integer in [0, maxq].
LogicalResult checkGrids(const QuantizedWeight &w, int64_t maxq,
                         WeightError error) {
  for (int64_t i = 0, e = w.rows * w.groups; i < e; ++i) {
    float s = w.scales[i], z = w.zeros[i];
    if (!std::isfinite(s) || s <= 0)
      return error() << "scale " << number(s) << " of row " << i / w.groups
                     << ", group " << i % w.groups
                     << ": a quantized type needs a positive finite scale",
             failure();
    if (!std::isfinite(z) || z != std::floor(z) || z < 0 || z > maxq)
      return error() << "zero point " << number(z) << " of row " << i / w.groups
                     << ", group " << i % w.groups
                     << ": expected an integer in the storage range [0, "
                     << maxq << "]",
             failure();
  }
  return success();
}

/// Places the ranked columns in their group's block; unless that is the
/// identity on all columns, the weight is read back from the dequantized
/// blocks. Fails when the blocks would pad the columns too much.
LogicalResult placeColumns(const QuantizedWeight &w, BlockLayout &layout,
                           WeightError error) {
  layout.padded = w.groups * layout.block;
  for (int64_t j = 0; j < w.cols; ++j) {
    layout.pos[j] += w.gIdx[j] * layout.block;
    layout.identity &= layout.pos[j] == j;
  }
  // Blocks of one size hold groups of different sizes only with padding;
  // GPTQ's groups pad less than one group.
  if (layout.padded > 2 * w.cols)
    return error() << w.groups << " groups of up to " << layout.block
                   << " columns would pad the " << w.cols
                   << " input columns to " << layout.padded
                   << " (more than twice): the groups are too uneven for "
                      "blocks of one size",
           failure();
  return success();
}

/// The codes in block order; padding holds the row's zero point of its
/// block, which dequantizes to 0 and is never read.
std::vector<char> blockCodes(const QuantizedWeight &w,
                             const BlockLayout &layout) {
  int64_t padded = layout.padded;
  std::vector<char> data(size_t(w.rows) * padded);
  for (int64_t r = 0; r < w.rows; ++r) {
    for (int64_t p = 0; p < padded; ++p)
      data[r * padded + p] =
          char(int64_t(w.zeros[r * w.groups + p / layout.block]));
    for (int64_t j = 0; j < w.cols; ++j)
      data[r * padded + layout.pos[j]] = char(w.codes[r * w.cols + j]);
  }
  return data;
}

/// The quantized element type of the weight's grids, stored unsigned in
/// `storage` from 0 to `maxq`: per axis with one grid per row (the columns
/// are then in their block's order), else per block of `block` columns;
/// null (with a diagnostic) when the quant dialect rejects it.
Type quantizedElementType(const QuantizedWeight &w, IntegerType storage,
                          int64_t maxq, int64_t block, WeightError error) {
  auto typeError = [&]() { return error() << "upstream quant type: "; };
  function_ref<InFlightDiagnostic()> emitTypeError = typeError;
  Type f32 = Float32Type::get(storage.getContext());
  // Unsigned storage (no QuantizationFlags::Signed), from 0.
  unsigned flags = 0;
  int64_t storageMin = 0;
  if (w.groups == 1) {
    SmallVector<double> scales(w.scales.begin(), w.scales.begin() + w.rows);
    SmallVector<int64_t> zeroPoints;
    for (float z : w.zeros.take_front(w.rows))
      zeroPoints.push_back(int64_t(z));
    return quant::UniformQuantizedPerAxisType::getChecked(
        emitTypeError, flags, storage, f32, ArrayRef<double>(scales),
        ArrayRef<int64_t>(zeroPoints),
        /*quantizedDimension=*/int32_t(0), storageMin, maxq);
  }
  int32_t dims[] = {0, 1};
  int64_t blockSizes[] = {1, block};
  auto gridType = RankedTensorType::get({w.rows, w.groups}, f32);
  auto scales = DenseElementsAttr::get(gridType, w.scales);
  SmallVector<APInt> zeroPoints;
  for (float z : w.zeros)
    zeroPoints.push_back(APInt(storage.getWidth(), uint64_t(z)));
  auto zeroPointsAttr = DenseElementsAttr::get(
      RankedTensorType::get({w.rows, w.groups}, storage), zeroPoints);
  return quant::UniformQuantizedSubChannelType::getChecked(
      emitTypeError, flags, storage, f32, scales, zeroPointsAttr,
      ArrayRef<int32_t>(dims), ArrayRef<int64_t>(blockSizes), storageMin, maxq);
}

/// Act-order: W[r, j] = blocks[r, pos[j]], for `resultType` rows x cols.
Value gatherColumns(OpBuilder &b, Location loc, Value blocks,
                    RankedTensorType resultType, ArrayRef<int64_t> pos) {
  SmallVector<int32_t> places(pos.begin(), pos.end());
  Value columns = arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(
          RankedTensorType::get({int64_t(pos.size())}, b.getI32Type()),
          ArrayRef<int32_t>(places)));
  Value init = tensor::EmptyOp::create(b, loc, resultType.getShape(),
                                       resultType.getElementType());
  AffineMap column =
      AffineMap::get(2, 0, b.getAffineDimExpr(1), b.getContext());
  auto gather = linalg::GenericOp::create(
      b, loc, resultType, ValueRange{columns}, ValueRange{init},
      ArrayRef<AffineMap>{column, b.getMultiDimIdentityMap(2)},
      ArrayRef<utils::IteratorType>{utils::IteratorType::parallel,
                                    utils::IteratorType::parallel},
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value r = linalg::IndexOp::create(nb, nloc, 0);
        Value p =
            arith::IndexCastOp::create(nb, nloc, nb.getIndexType(), args[0]);
        Value v = tensor::ExtractOp::create(nb, nloc, blocks, ValueRange{r, p});
        linalg::YieldOp::create(nb, nloc, v);
      });
  return gather.getResult(0);
}
} // namespace

FailureOr<Value> gptq::buildQuantTypesWeight(OpBuilder &b, Location loc,
                                             StringRef layer,
                                             const QuantizedWeight &w) {
  auto error = [&]() { return emitError(loc) << "layer '" << layer << "': "; };
  int64_t rows = w.rows, cols = w.cols, groups = w.groups;
  if (w.bits < 1 || w.bits > 8)
    return error() << "bits " << w.bits << ": expected 1 to 8", failure();
  if (rows < 1 || cols < 1 || groups < 1)
    return error() << "weight " << rows << " x " << cols << " with " << groups
                   << " groups: a quantized type needs a non-empty tensor",
           failure();
  // The codes are unsigned and stored in bytes (u8) whatever their width,
  // narrowed to [0, 2^bits - 1]: sub-byte storage types are not what every
  // consumer lays out in memory alike (docs/quant-types.md).
  int64_t maxq = (int64_t(1) << w.bits) - 1;
  auto storage = IntegerType::get(b.getContext(), 8);
  Type f32 = b.getF32Type();
  BlockLayout layout;
  if (failed(rankColumns(w, layout, error)) ||
      failed(checkGrids(w, maxq, error)) ||
      failed(placeColumns(w, layout, error)))
    return failure();
  std::vector<char> data = blockCodes(w, layout);
  Type elementType =
      quantizedElementType(w, storage, maxq, layout.block, error);
  if (!elementType)
    return failure();

  int64_t padded = layout.padded;
  auto codesType = RankedTensorType::get({rows, padded}, storage);
  Value codes = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::getFromRawBuffer(codesType, data));
  Value quantized = quant::StorageCastOp::create(
      b, loc, RankedTensorType::get({rows, padded}, elementType), codes);
  Value blocks = quant::DequantizeCastOp::create(
      b, loc, RankedTensorType::get({rows, padded}, f32), quantized);
  auto resultType = RankedTensorType::get({rows, cols}, f32);
  if (layout.identity && padded == cols)
    return blocks;
  if (layout.identity)
    return tensor::ExtractSliceOp::create(
               b, loc, resultType, blocks,
               ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0)},
               ArrayRef<OpFoldResult>{b.getIndexAttr(rows),
                                      b.getIndexAttr(cols)},
               ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)})
        .getResult();
  return gatherColumns(b, loc, blocks, resultType, layout.pos);
}
