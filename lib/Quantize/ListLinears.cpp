//===- ListLinears.cpp - Report the linear layers as remarks --------------===//

#include "gptq/Quantize/LinearLayers.h"
#include "gptq/Quantize/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQLISTLINEARS
#include "gptq/Quantize/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;
using namespace mlir::gptq;

namespace {

std::string plural(size_t n, StringRef word) {
  return std::to_string(n) + " " + word.str() + (n == 1 ? "" : "s");
}

struct ListLinearsPass
    : public gptq::impl::GPTQListLinearsBase<ListLinearsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    markAllAnalysesPreserved();
    LinearLayers linears(module);
    if (linears.empty()) {
      emitRemark(module.getLoc(),
                 "no linear layer found: no linalg contraction of an "
                 "activation with a constant 2-D float weight");
      return;
    }
    // One numbering of values for the whole module, as the printer gives.
    AsmState state(module);
    // The layers of each function, in program order; a module of several
    // (an imported model's forward, prefill and decode) counts each.
    llvm::MapVector<Operation *, SmallVector<const LinearLayer *>> byFunction;
    for (const LinearLayer &layer : linears.getLayers())
      byFunction[layer.op->getParentOfType<FunctionOpInterface>()].push_back(
          &layer);
    for (auto &[function, layers] : byFunction) {
      size_t outside = 0;
      llvm::SmallDenseSet<int64_t> blocks;
      for (const LinearLayer *layer : layers) {
        report(*layer, state);
        outside += !layer->block;
        if (layer->block)
          blocks.insert(*layer->block);
      }
      std::string summary = plural(layers.size(), "linear layer");
      std::string blockCount = plural(blocks.size(), "block");
      if (outside)
        summary += ": " + std::to_string(layers.size() - outside) + " in " +
                   blockCount + ", " + std::to_string(outside) + " in no block";
      else
        summary += " in " + blockCount;
      if (byFunction.size() > 1 && function)
        summary +=
            ", in '@" + cast<SymbolOpInterface>(function).getName().str() + "'";
      emitRemark(function && byFunction.size() > 1 ? function->getLoc()
                                                   : module.getLoc(),
                 summary);
    }
  }

  void report(const LinearLayer &layer, AsmState &state) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "linear layer '" << layer.name << "'";
    if (layer.generatedName)
      os << " at " << layer.op->getLoc();
    os << ": " << layer.outFeatures << " x " << layer.inFeatures;
    if (layer.block)
      os << ", block " << *layer.block;
    else
      os << ", no block";
    os << ", op " << layer.op->getName() << ", input ";
    layer.activation.printAsOperand(os, state);
    if (Operation *producer = layer.activation.getDefiningOp())
      os << " (" << producer->getName() << ")";
    os << ", weight ";
    if (layer.weightGlobal)
      os << "@" << cast<SymbolOpInterface>(layer.weightGlobal).getName();
    else
      os << layer.weightSource->getName();
    if (layer.transposed)
      os << " (stored in x out)";
    if (layer.sharedWeight)
      os << " (also used elsewhere)";
    if (layer.classifier)
      os << " (output classifier)";
    if (layer.router)
      os << " (router)";
    if (layer.expert)
      os << " (expert)";
    // Through the location, not the op: the op would be printed with it.
    emitRemark(layer.op->getLoc(), text);
  }
};

} // namespace
