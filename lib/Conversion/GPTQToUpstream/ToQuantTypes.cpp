//===- ToQuantTypes.cpp - gptq-to-quant-types -----------------------------===//
//------------------------------===//
//
// Rewrites every gptq.dequantize of constant operands into the upstream
// quant dialect's types with buildQuantTypesWeight (lib/Quantize).
//
//===----------------------------------------------------------------------===//

#include "gptq/Conversion/Passes.h"
#include "gptq/Dialect/GPTQ/IR/GPTQ.h"
#include "gptq/Quantize/QuantTypes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Quant/IR/Quant.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQTOQUANTTYPES
#include "gptq/Conversion/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;
using namespace mlir::gptq;

namespace {

/// A constant's elements when its data is at hand.
template <typename T>
std::optional<SmallVector<T>> valuesOf(ElementsAttr attr) {
  if (auto dense = dyn_cast<DenseElementsAttr>(attr))
    return SmallVector<T>(dense.getValues<T>());
  if (auto resource =
          dyn_cast<::mlir::detail::DenseResourceElementsAttrBase<T>>(attr))
    if (std::optional<ArrayRef<T>> values = resource.tryGetAsArrayRef())
      if (int64_t(values->size()) == resource.getNumElements())
        return SmallVector<T>(*values);
  return std::nullopt;
}

/// The operand's constant, when it is a static arith.constant of elements.
ElementsAttr constantOf(Value v) {
  auto c = v.getDefiningOp<arith::ConstantOp>();
  if (!c || !cast<ShapedType>(c.getType()).hasStaticShape())
    return {};
  return dyn_cast<ElementsAttr>(c.getValue());
}

/// The layer a dequantization belongs to: the qweight resource's name
/// without its suffix, else the op's location name.
std::string layerName(DequantizeOp op, ElementsAttr packed) {
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(packed)) {
    StringRef key = resource.getRawHandle().getKey();
    key.consume_back(".qweight");
    return key.str();
  }
  if (auto name = dyn_cast<NameLoc>(op.getLoc()))
    return name.getName().str();
  return "gptq.dequantize";
}

struct GPTQToQuantTypesPass
    : public gptq::impl::GPTQToQuantTypesBase<GPTQToQuantTypesPass> {
  void runOnOperation() override {
    SmallVector<DequantizeOp> ops;
    getOperation().walk([&](DequantizeOp op) { ops.push_back(op); });
    for (DequantizeOp op : ops)
      if (failed(rewrite(op)))
        return signalPassFailure();
  }

  LogicalResult rewrite(DequantizeOp op) {
    auto unpack = op.getCodes().getDefiningOp<UnpackOp>();
    if (!unpack)
      return success();
    ElementsAttr packed = constantOf(unpack.getPacked());
    ElementsAttr scales = constantOf(op.getScales());
    ElementsAttr zeros = constantOf(op.getZeros());
    ElementsAttr gIdx = constantOf(op.getGIdx());
    auto resultType = cast<ShapedType>(op.getType());
    if (!packed || !scales || !zeros || !gIdx ||
        !matchPattern(unpack.getColumns(), m_Constant()) ||
        !resultType.hasStaticShape())
      return success();
    std::string layer = layerName(op, packed);
    std::optional<SmallVector<int32_t>> words = valuesOf<int32_t>(packed);
    std::optional<SmallVector<float>> s = valuesOf<float>(scales);
    std::optional<SmallVector<float>> z = valuesOf<float>(zeros);
    std::optional<SmallVector<int32_t>> g = valuesOf<int32_t>(gIdx);
    if (!words || !s || !z || !g)
      return op.emitError()
             << "layer '" << layer
             << "': the data of a constant operand is missing or "
                "does not fit its type (an elided, undefined or "
                "short dense_resource)";

    QuantizedWeight w;
    w.rows = resultType.getDimSize(0);
    w.cols = resultType.getDimSize(1);
    w.groups = cast<ShapedType>(scales.getType()).getDimSize(1);
    w.bits = unpack.getBits();
    // The verifier has checked the words against the columns.
    int64_t wordsPerRow = cast<ShapedType>(packed.getType()).getDimSize(1);
    // gptq.pack's layout: row r's codes are one little-endian bit stream.
    std::vector<uint8_t> codes(size_t(w.rows) * w.cols);
    for (int64_t r = 0; r < w.rows; ++r)
      for (int64_t j = 0; j < w.cols; ++j) {
        uint64_t bit = uint64_t(j) * w.bits;
        const int32_t *row = words->data() + r * wordsPerRow;
        uint64_t value = uint32_t(row[bit / 32]) >> (bit % 32);
        if (bit % 32 + w.bits > 32)
          value |= uint64_t(uint32_t(row[bit / 32 + 1])) << (32 - bit % 32);
        codes[r * w.cols + j] = uint8_t(value & ((1u << w.bits) - 1));
      }
    w.codes = codes;
    w.scales = *s;
    w.zeros = *z;
    w.gIdx = *g;

    OpBuilder b(op);
    FailureOr<Value> weight = buildQuantTypesWeight(b, op.getLoc(), layer, w);
    if (failed(weight))
      return failure();
    llvm::SetVector<Operation *> producers;
    Value operands[] = {op.getCodes(),  unpack.getPacked(), unpack.getColumns(),
                        op.getScales(), op.getZeros(),      op.getGIdx()};
    for (Value v : operands)
      producers.insert(v.getDefiningOp());
    op.replaceAllUsesWith(*weight);
    op.erase();
    for (Operation *producer : producers)
      if (producer->use_empty())
        producer->erase();
    return success();
  }
};

} // namespace
