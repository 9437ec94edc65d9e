//===- ApplyQuantized.cpp - Quantized weights into a model ----------------===//
//
// Rewrites each quantized layer's weight use to its quantized form
// (ApplyQuantized.h).
//
//===----------------------------------------------------------------------===//

#include "gptq/Quantize/ApplyQuantized.h"

#include "gptq/Dialect/GPTQ/IR/GPTQ.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::gptq;

namespace {
/// A blob that reads `bytes` in place, keeping `keep` alive.
DenseResourceElementsAttr inPlace(ShapedType type, StringRef name,
                                  ArrayRef<char> bytes,
                                  std::shared_ptr<const void> keep) {
  return DenseResourceElementsAttr::get(type, name,
                                        AsmResourceBlob(
                                            bytes, 64,
                                            [keep](void *, size_t, size_t) {},
                                            /*dataIsMutable=*/false));
}

/// The packed form: the four constants, gptq.unpack and gptq.dequantize.
Value buildPacked(OpBuilder &b, Location loc, const AppliedWeight &w,
                  int64_t bits, const std::shared_ptr<const void> &keep) {
  const LinearLayer &layer = *w.layer;
  int64_t out = layer.outFeatures, in = layer.inFeatures;
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  auto packedType = RankedTensorType::get({out, w.words}, i32);
  auto gridType = RankedTensorType::get({out, w.groups}, f32);
  auto gIdxType = RankedTensorType::get({in}, i32);
  auto constant = [&](ShapedType type, StringRef suffix,
                      ArrayRef<char> bytes) -> Value {
    return arith::ConstantOp::create(
        b, loc, inPlace(type, (layer.name + suffix).str(), bytes, keep));
  };
  Value words = constant(packedType, ".qweight", w.qweight);
  Value scales = constant(gridType, ".scales", w.scales);
  Value zeros = constant(gridType, ".zeros", w.zeros);
  Value gIdx = constant(gIdxType, ".g_idx", w.gIdx);
  Value columns = arith::ConstantIndexOp::create(b, loc, in);
  auto codesType = RankedTensorType::get({out, in}, b.getI8Type());
  Value codes = UnpackOp::create(b, loc, codesType, words, columns,
                                 b.getI64IntegerAttr(bits));
  return DequantizeOp::create(b, loc, RankedTensorType::get({out, in}, f32),
                              codes, scales, zeros, gIdx);
}

/// Records the ops a builder creates, in order.
struct Recorder : OpBuilder::Listener {
  SmallVector<Operation *> ops;
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    ops.push_back(op);
  }
};

/// The layers of other functions that read the same weight as `layer`, in
/// the same layout: a model's prefill and decode beside the forward that
/// was calibrated.
SmallVector<const LinearLayer *> twinsOf(const LinearLayer &layer,
                                         const LinearLayers &all) {
  SmallVector<const LinearLayer *> twins;
  auto home = layer.op->getParentOfType<func::FuncOp>();
  for (const LinearLayer &other : all.getLayers())
    if (other.op != layer.op && other.weightAttr == layer.weightAttr &&
        other.outFeatures == layer.outFeatures &&
        other.inFeatures == layer.inFeatures &&
        other.transposed == layer.transposed &&
        other.op->getParentOfType<func::FuncOp>() != home)
      twins.push_back(&other);
  return twins;
}

/// Erases `sources` that nothing reads, and what only they read.
void eraseUnread(ModuleOp module, SmallVector<Operation *> sources) {
  for (size_t i = 0; i < sources.size(); ++i) {
    Operation *source = sources[i];
    if (!source->use_empty())
      continue;
    // A widening's constant goes with it when nothing else reads it.
    if (auto ext = dyn_cast<arith::ExtFOp>(source)) {
      Operation *stored = ext.getIn().getDefiningOp();
      source->erase();
      if (stored && stored->use_empty())
        sources.push_back(stored);
      continue;
    }
    Operation *global = nullptr;
    if (auto load = dyn_cast<ml_program::GlobalLoadConstOp>(source))
      global =
          SymbolTable::lookupNearestSymbolFrom(source, load.getGlobalAttr());
    source->erase();
    if (global && SymbolTable::symbolKnownUseEmpty(global, module))
      global->erase();
  }
}
} // namespace

LogicalResult mlir::gptq::applyQuantizedWeights(
    ModuleOp module, ArrayRef<AppliedWeight> weights, WeightForm form,
    int64_t bits, std::shared_ptr<const void> keep) {
  // The uses to replace, found before any is replaced: each layer's, and
  // those of the layers of other functions that read the same weight, which
  // get the same quantized form (the same constants, so the same data).
  LinearLayers all(module);
  std::vector<OpOperand *> uses;
  std::vector<SmallVector<OpOperand *>> twinUses;
  for (const AppliedWeight &w : weights) {
    uses.push_back(&getWeightSourceUse(*w.layer));
    twinUses.emplace_back();
    for (const LinearLayer *twin : twinsOf(*w.layer, all))
      twinUses.back().push_back(&getWeightSourceUse(*twin));
  }
  SmallVector<Operation *> sources;
  for (auto [w, use, twins] : llvm::zip_equal(weights, uses, twinUses)) {
    const LinearLayer &layer = *w.layer;
    OpBuilder b(use->getOwner());
    Recorder recorder;
    b.setListener(&recorder);
    Location loc = layer.weightSource->getLoc();
    auto storedType = cast<RankedTensorType>(use->get().getType());
    Value weight;
    switch (form) {
    case WeightForm::Float:
      weight = arith::ConstantOp::create(
          b, loc,
          DenseResourceElementsAttr::get(
              storedType, layer.name + ".dequantized",
              HeapAsmResourceBlob::allocateAndCopyWithAlign(
                  w.dequantized, alignof(uint64_t))));
      break;
    case WeightForm::Quant: {
      FailureOr<Value> built =
          buildQuantTypesWeight(b, loc, layer.name, w.quantized);
      if (failed(built))
        return failure();
      weight = *built;
      break;
    }
    case WeightForm::Packed:
      weight = buildPacked(b, loc, w, bits, keep);
      break;
    }
    if (form != WeightForm::Float && layer.transposed) {
      Value init = tensor::EmptyOp::create(
          b, loc, {layer.inFeatures, layer.outFeatures}, b.getF32Type());
      weight = linalg::TransposeOp::create(b, loc, weight, init,
                                           ArrayRef<int64_t>{1, 0})
                   ->getResult(0);
    }
    use->set(weight);
    sources.push_back(layer.weightSource);
    for (OpOperand *twin : twins) {
      OpBuilder at(twin->getOwner());
      IRMapping mapping;
      // The ops made at the use (cloning one clones its regions too).
      for (Operation *op : recorder.ops)
        if (op->getBlock() == use->getOwner()->getBlock())
          at.clone(*op, mapping);
      Operation *source = twin->get().getDefiningOp();
      twin->set(mapping.lookup(weight));
      if (source)
        sources.push_back(source);
    }
  }
  eraseUnread(module, std::move(sources));
  return success();
}
