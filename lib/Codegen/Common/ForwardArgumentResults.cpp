//===- ForwardArgumentResults.cpp - Results that are their own argument ---===//
//
// After bufferization, a private function that writes its output into an
// argument's buffer and returns it makes the buffer deallocation pipeline
// clone that buffer on return (the callee does not own it). The result is
// dropped instead and each caller reads the argument it passed.
//
//===----------------------------------------------------------------------===//

#include "gptq/Codegen/Common/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/BitVector.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQFORWARDARGUMENTRESULTS
#include "gptq/Codegen/Common/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {

/// The argument that `value` is (through memref.cast), or null.
BlockArgument argumentOf(Value value, func::FuncOp func) {
  while (auto cast = value.getDefiningOp<memref::CastOp>())
    value = cast.getSource();
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || arg.getOwner() != &func.getBody().front())
    return nullptr;
  return arg;
}

struct GPTQForwardArgumentResultsPass
    : gptq::impl::GPTQForwardArgumentResultsBase<
          GPTQForwardArgumentResultsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Every use of a private function must be a call that can be rewritten.
    DenseMap<func::FuncOp, SmallVector<func::CallOp>> calls;
    DenseSet<func::FuncOp> otherUses;
    for (func::FuncOp func : module.getOps<func::FuncOp>()) {
      if (!func.isPrivate() || func.isExternal())
        continue;
      std::optional<SymbolTable::UseRange> uses =
          SymbolTable::getSymbolUses(func, module);
      if (!uses) {
        otherUses.insert(func);
        continue;
      }
      for (const SymbolTable::SymbolUse &use : *uses) {
        auto call = dyn_cast<func::CallOp>(use.getUser());
        if (call)
          calls[func].push_back(call);
        else
          otherUses.insert(func);
      }
    }

    IRRewriter rewriter(&getContext());
    for (func::FuncOp func : module.getOps<func::FuncOp>()) {
      if (!func.isPrivate() || func.isExternal() || otherUses.contains(func))
        continue;
      // One return, at the end of the body's single block.
      if (!func.getBody().hasOneBlock())
        continue;
      auto ret = dyn_cast<func::ReturnOp>(func.getBody().front().getTerminator());
      if (!ret)
        continue;
      // The argument each result returns (null for the results kept).
      SmallVector<BlockArgument> returned;
      llvm::BitVector dropped(func.getNumResults());
      for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
        returned.push_back(isa<BaseMemRefType>(value.getType())
                               ? argumentOf(value, func)
                               : nullptr);
        if (returned.back())
          dropped.set(i);
      }
      if (dropped.none())
        continue;
      if (failed(func.eraseResults(dropped))) {
        func.emitError("cannot drop the results that return arguments");
        return signalPassFailure();
      }
      ret->eraseOperands(dropped);
      for (func::CallOp call : calls[func]) {
        rewriter.setInsertionPoint(call);
        auto replacement = func::CallOp::create(rewriter, call.getLoc(), func,
                                                call.getOperands());
        replacement.setNoInline(call.getNoInline());
        replacement->setDiscardableAttrs(call->getDiscardableAttrDictionary());
        SmallVector<Value> results;
        unsigned next = 0;
        for (unsigned i = 0, e = call.getNumResults(); i < e; ++i) {
          if (!returned[i]) {
            results.push_back(replacement.getResult(next++));
            continue;
          }
          Value arg = call.getOperand(returned[i].getArgNumber());
          Type type = call.getResult(i).getType();
          if (arg.getType() != type)
            arg = memref::CastOp::create(rewriter, call.getLoc(), type, arg);
          results.push_back(arg);
        }
        rewriter.replaceOp(call, results);
      }
    }
  }
};
} // namespace
