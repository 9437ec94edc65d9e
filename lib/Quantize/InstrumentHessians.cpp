//===- InstrumentHessians.cpp - Return the linear layers' Hessians --------===//
//
// Makes the entry function also return, for each of its linear layers, the
// Hessian 2/n * sum x x^T of the inputs that reach the layer in one call,
// and the sample count n, so that running the function on calibration data
// gives the Hessians that GPTQ needs.
//
//===----------------------------------------------------------------------===//

#include "gptq/Dialect/GPTQ/IR/GPTQ.h"
#include "gptq/Quantize/EntryFunction.h"
#include "gptq/Quantize/LinearLayers.h"
#include "gptq/Quantize/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQINSTRUMENTHESSIANS
#include "gptq/Quantize/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;
using namespace mlir::gptq;

namespace {

/// The attribute that lists the layer names of the Hessian results.
constexpr StringLiteral kHessiansAttr = "gptq.hessians";

struct InstrumentHessiansPass
    : public gptq::impl::GPTQInstrumentHessiansBase<InstrumentHessiansPass> {
  using Base::Base;

  /// An error at `loc`, prefixed with the pass's name; the pass fails.
  InFlightDiagnostic fail(Location loc) {
    signalPassFailure();
    return emitError(loc) << "gptq-instrument-hessians: ";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<func::FuncOp> entryFunc = findEntryFunction(
        module, entry, [&](Location loc) { return fail(loc); });
    if (failed(entryFunc))
      return;
    func::FuncOp func = *entryFunc;
    StringRef entry = func.getSymName();
    if (!func.getBody().hasOneBlock()) {
      fail(func.getLoc()) << "'@" << entry
                          << "' has more than one block, expected one";
      return;
    }
    if (func->hasAttr(kHessiansAttr)) {
      fail(func.getLoc()) << "'@" << entry << "' already has '" << kHessiansAttr
                          << "' (instrumented twice)";
      return;
    }
    if (!SymbolTable::symbolKnownUseEmpty(func, module)) {
      fail(func.getLoc()) << "'@" << entry
                          << "' is used in the module; its users would not "
                             "match its new results";
      return;
    }

    // The whole module's analysis, so that names match gptq-list-linears.
    LinearLayers linears(module);
    Block &body = func.getBody().front();
    auto filter = LayerNameFilter::create(include, exclude);
    if (!filter) {
      fail(module.getLoc()) << llvm::toString(filter.takeError());
      return;
    }
    size_t found = 0;
    SmallVector<const LinearLayer *> layers;
    for (const LinearLayer &layer : linears.getLayers()) {
      if (!func->isProperAncestor(layer.op))
        continue;
      ++found;
      if (!filter->selects(layer.name))
        continue;
      if (layer.op->getBlock() != &body) {
        fail(layer.op->getLoc()) << "linear layer '" << layer.name
                                 << "' is inside a nested region of '@" << entry
                                 << "', expected it in the function's body";
        return;
      }
      std::string problem = checkCalibrationInput(layer);
      if (!problem.empty()) {
        fail(layer.op->getLoc())
            << "linear layer '" << layer.name << "': " << problem;
        return;
      }
      layers.push_back(&layer);
    }
    if (layers.empty() && found) {
      fail(func.getLoc()) << "none of the " << found << " linear layers of '@"
                          << entry << "' is selected by include='" << include
                          << "' and exclude='" << exclude << "'";
      return;
    }
    if (layers.empty()) {
      fail(func.getLoc()) << "no linear layer in '@" << entry
                          << "': no linalg contraction of an activation with a "
                             "constant 2-D float weight";
      return;
    }

    // One sample count is returned: every layer's input must have the same
    // samples, so [tokens, in] and [samples, tokens, in] inputs cannot mix.
    auto samplesOf = [](const LinearLayer *layer) -> std::optional<int64_t> {
      auto type = cast<RankedTensorType>(layer->activation.getType());
      if (type.getRank() < 3)
        return std::nullopt; // One sample.
      int64_t count = 1;
      for (int64_t d = 0; d < type.getRank() - 2; ++d) {
        if (type.isDynamicDim(d))
          return ShapedType::kDynamic;
        count *= type.getDimSize(d);
      }
      return count;
    };
    std::optional<int64_t> firstSamples = samplesOf(layers.front());
    for (const LinearLayer *layer : layers) {
      std::optional<int64_t> samples = samplesOf(layer);
      bool differ =
          samples.has_value() != firstSamples.has_value() ||
          (samples && !ShapedType::isDynamic(*samples) &&
           !ShapedType::isDynamic(*firstSamples) && *samples != *firstSamples);
      if (!differ)
        continue;
      auto describe = [](std::optional<int64_t> n) {
        if (!n)
          return std::string("one sample ([tokens, in])");
        if (ShapedType::isDynamic(*n))
          return std::string("a dynamic number of samples");
        return std::to_string(*n) + " samples";
      };
      fail(layer->op->getLoc())
          << "linear layer '" << layer->name << "' has an input of "
          << describe(samples) << " but '" << layers.front()->name << "' has "
          << describe(firstSamples)
          << "; one sample count is returned, so they must agree";
      return;
    }

    OpBuilder b(&getContext());
    SmallVector<Value> hessians;
    Value count;
    SmallVector<Attribute> names;
    for (const LinearLayer *layer : layers) {
      Location loc = layer->op->getLoc();
      b.setInsertionPoint(layer->op);
      Type f32 = b.getF32Type();
      auto hType =
          RankedTensorType::get({layer->inFeatures, layer->inFeatures}, f32);
      Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(f32));
      Value empty = tensor::EmptyOp::create(b, loc, hType.getShape(), f32);
      Value h0 = linalg::FillOp::create(b, loc, zero, empty).getResult(0);
      Value n0 = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0));
      Value input = buildCalibrationInput(b, loc, layer->activation);
      auto acc = HessianAccumulateOp::create(b, loc, hType, b.getI64Type(),
                                             input, h0, n0);
      hessians.push_back(acc.getResult());
      if (!count)
        count = acc.getNewCount();
      names.push_back(b.getStringAttr(layer->name));
    }

    auto ret = cast<func::ReturnOp>(body.getTerminator());
    b.setInsertionPoint(ret);
    Value countTensor = tensor::FromElementsOp::create(
        b, ret.getLoc(), RankedTensorType::get({}, b.getI64Type()), count);
    SmallVector<Value> extra(hessians);
    extra.push_back(countTensor);
    unsigned first = func.getNumResults();
    SmallVector<unsigned> indices(extra.size(), first);
    SmallVector<Type> types;
    for (Value v : extra)
      types.push_back(v.getType());
    SmallVector<DictionaryAttr> attrs(extra.size(), b.getDictionaryAttr({}));
    if (failed(func.insertResults(indices, types, attrs))) {
      fail(func.getLoc()) << "could not add results "
                             "to '@"
                          << entry << "'";
      return;
    }
    ret->insertOperands(ret->getNumOperands(), extra);
    func->setAttr(kHessiansAttr, b.getArrayAttr(names));
  }
};

} // namespace
