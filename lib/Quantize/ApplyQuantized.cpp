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

#include <algorithm>
#include <numeric>

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

/// The packed form: the four constants, gptq.unpack and gptq.dequantize;
/// and the permutation's constant when the columns were sorted by group
/// (`perm`, else null).
Value buildPacked(OpBuilder &b, Location loc, const AppliedWeight &w,
                  int64_t bits, const std::shared_ptr<const void> &keep,
                  Value &perm) {
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
  if (!w.perm.empty())
    perm = constant(RankedTensorType::get({in}, b.getI64Type()), ".perm",
                    w.perm);
  Value columns = arith::ConstantIndexOp::create(b, loc, in);
  auto codesType = RankedTensorType::get({out, in}, b.getI8Type());
  Value codes = UnpackOp::create(b, loc, codesType, words, columns,
                                 b.getI64IntegerAttr(bits));
  return DequantizeOp::create(b, loc, RankedTensorType::get({out, in}, f32),
                              codes, scales, zeros, gIdx);
}

/// The contraction of `layer` reads its activation permuted along the
/// reduction by `perm` (the order its weight's columns were sorted in).
LogicalResult permuteActivation(const LinearLayer &layer, Value perm) {
  linalg::LinalgOp op = layer.op;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->k.size() != 1)
    return op->emitError("layer '")
           << layer.name
           << "': cannot find the reduction to permute its activation along";
  for (OpOperand *input : op.getDpsInputOperands()) {
    if (input->get() != layer.activation)
      continue;
    AffineMap map = op.getMatchingIndexingMap(input);
    std::optional<unsigned> at =
        map.getResultPosition(getAffineDimExpr(dims->k.front(), op.getContext()));
    if (!at)
      break;
    OpBuilder b(op);
    input->set(PermuteOp::create(b, op.getLoc(), layer.activation, perm,
                                 b.getDenseI64ArrayAttr({int64_t(*at)}),
                                 /*inverse=*/false));
    return success();
  }
  return op->emitError("layer '")
         << layer.name << "': its activation is not indexed by the reduction";
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
    Operation *global = loadedImmutableGlobal(source);
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
  std::vector<SmallVector<const LinearLayer *>> twinLayers;
  for (const AppliedWeight &w : weights) {
    uses.push_back(&getWeightSourceUse(*w.layer));
    twinUses.emplace_back();
    twinLayers.push_back(twinsOf(*w.layer, all));
    for (const LinearLayer *twin : twinLayers.back())
      twinUses.back().push_back(&getWeightSourceUse(*twin));
  }
  SmallVector<Operation *> sources;
  for (auto [w, use, twins, twinLayerList] :
       llvm::zip_equal(weights, uses, twinUses, twinLayers)) {
    const LinearLayer &layer = *w.layer;
    OpBuilder b(use->getOwner());
    Recorder recorder;
    b.setListener(&recorder);
    Location loc = layer.weightSource->getLoc();
    auto storedType = cast<RankedTensorType>(use->get().getType());
    Value weight, perm;
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
      weight = buildPacked(b, loc, w, bits, keep, perm);
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
    if (perm && failed(permuteActivation(layer, perm)))
      return failure();
    sources.push_back(layer.weightSource);
    for (auto [twin, twinLayer] : llvm::zip_equal(twins, twinLayerList)) {
      OpBuilder at(twin->getOwner());
      IRMapping mapping;
      // The ops made at the use (cloning one clones its regions too).
      for (Operation *op : recorder.ops)
        if (op->getBlock() == use->getOwner()->getBlock())
          at.clone(*op, mapping);
      Operation *source = twin->get().getDefiningOp();
      twin->set(mapping.lookup(weight));
      if (perm && failed(permuteActivation(*twinLayer, mapping.lookup(perm))))
        return failure();
      if (source)
        sources.push_back(source);
    }
  }
  eraseUnread(module, std::move(sources));
  return success();
}

bool mlir::gptq::rowsKernelReadsGroups(int64_t bits, int64_t groupSize) {
  if (groupSize <= 0)
    return false;
  if (bits == 4 && groupSize % 16 == 0)
    return true;
  if (bits >= 2 && bits <= 7)
    return groupSize % 32 == 0;
  return bits == 8 && groupSize % 64 == 0;
}

NpyArray mlir::gptq::sortColumnsByGroup(NpyArray &codes, NpyArray &gIdx) {
  int64_t cols = gIdx.numElements();
  const int32_t *groups = gIdx.as<int32_t>();
  if (std::is_sorted(groups, groups + cols))
    return NpyArray();
  NpyArray perm = NpyArray::zeros(DType::I64, {cols});
  int64_t *order = perm.as<int64_t>();
  std::iota(order, order + cols, int64_t(0));
  std::stable_sort(order, order + cols, [&](int64_t a, int64_t b) {
    return groups[a] < groups[b];
  });
  NpyArray sortedGroups = NpyArray::zeros(DType::I32, {cols});
  for (int64_t j = 0; j < cols; ++j)
    sortedGroups.as<int32_t>()[j] = groups[order[j]];
  int64_t rows = codes.shape[0];
  std::vector<uint8_t> row(cols);
  uint8_t *data = codes.as<uint8_t>();
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t *at = data + r * cols;
    for (int64_t j = 0; j < cols; ++j)
      row[j] = at[order[j]];
    std::copy(row.begin(), row.end(), at);
  }
  gIdx = std::move(sortedGroups);
  return perm;
}
