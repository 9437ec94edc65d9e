//===- ForwardArgumentResults.cpp - Results that callers provide ----------===//
//
// After bufferization, a private function that writes its output into an
// argument's buffer and returns it makes the buffer deallocation pipeline
// clone that buffer on return (the callee does not own it). The result is
// dropped instead and each caller reads the argument it passed. A result
// that is a buffer the function allocates, with sizes its arguments give,
// becomes an argument too: each caller allocates it, so that the caller
// knows it for a fresh buffer and frees it after its last use.
//
//===----------------------------------------------------------------------===//

#include "gptq/Codegen/Common/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/BitVector.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQFORWARDARGUMENTRESULTS
#include "gptq/Codegen/Common/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {

/// `value` before any memref.cast.
Value withoutCasts(Value value) {
  while (auto cast = value.getDefiningOp<memref::CastOp>())
    value = cast.getSource();
  return value;
}

/// The argument that `value` is (through memref.cast), or null.
BlockArgument argumentOf(Value value, func::FuncOp func) {
  auto arg = dyn_cast<BlockArgument>(withoutCasts(value));
  if (!arg || arg.getOwner() != &func.getBody().front())
    return nullptr;
  return arg;
}

/// Whether `value`, in the body of `func`, is computed from its arguments
/// alone by side-effect-free ops of the entry block (a size from
/// `memref.dim` of an argument, an index constant): a caller can compute
/// it from its operands.
bool fromArguments(Value value, func::FuncOp func, unsigned depth = 0) {
  Block &entry = func.getBody().front();
  if (auto arg = dyn_cast<BlockArgument>(value))
    return arg.getOwner() == &entry;
  Operation *def = value.getDefiningOp();
  if (depth > 8 || def->getBlock() != &entry || def->getNumRegions() ||
      !isMemoryEffectFree(def))
    return false;
  return llvm::all_of(def->getOperands(), [&](Value operand) {
    return fromArguments(operand, func, depth + 1);
  });
}

/// The buffer `value` is (through memref.cast) when the function allocates
/// it in its entry block with sizes from its arguments, else null.
memref::AllocOp allocationOf(Value value, func::FuncOp func) {
  auto alloc = withoutCasts(value).getDefiningOp<memref::AllocOp>();
  if (!alloc || alloc->getBlock() != &func.getBody().front() ||
      !alloc.getSymbolOperands().empty() ||
      !llvm::all_of(alloc.getDynamicSizes(),
                    [&](Value size) { return fromArguments(size, func); }))
    return nullptr;
  return alloc;
}

/// Clones into the caller, before `call`, what computes `value` in the
/// callee from its arguments (the call's operands).
Value computeAtCall(Value value, func::CallOp call, IRMapping &map,
                    RewriterBase &rewriter) {
  if (Value known = map.lookupOrNull(value))
    return known;
  if (auto arg = dyn_cast<BlockArgument>(value))
    return call.getOperand(arg.getArgNumber());
  Operation *def = value.getDefiningOp();
  for (Value operand : def->getOperands())
    map.map(operand, computeAtCall(operand, call, map, rewriter));
  Operation *clone = rewriter.clone(*def, map);
  return clone->getResult(cast<OpResult>(value).getResultNumber());
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
      // The argument each result returns, or the buffer it allocates for
      // it (null for the results kept).
      SmallVector<BlockArgument> returned;
      SmallVector<memref::AllocOp> allocated;
      llvm::BitVector dropped(func.getNumResults());
      for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
        bool memref = isa<BaseMemRefType>(value.getType());
        returned.push_back(memref ? argumentOf(value, func) : nullptr);
        allocated.push_back(memref && !returned.back()
                                ? allocationOf(value, func)
                                : nullptr);
        // A buffer returned twice is allocated by the callers once.
        if (allocated.back() &&
            llvm::count(allocated, allocated.back()) > 1)
          allocated.back() = nullptr;
        if (returned.back() || allocated.back())
          dropped.set(i);
      }
      if (dropped.none())
        continue;
      if (failed(func.eraseResults(dropped))) {
        func.emitError("cannot drop the results that return arguments");
        return signalPassFailure();
      }
      ret->eraseOperands(dropped);
      // Each allocated result is a trailing argument, in result order; the
      // allocations stay until the callers have copied their sizes.
      SmallVector<std::pair<memref::AllocOp, BlockArgument>> outputs;
      for (memref::AllocOp alloc : allocated) {
        if (!alloc)
          continue;
        unsigned index = func.getNumArguments();
        if (failed(func.insertArgument(index, alloc.getType(), {},
                                       alloc.getLoc()))) {
          func.emitError("cannot add an argument for an allocated result");
          return signalPassFailure();
        }
        outputs.emplace_back(alloc, func.getArgument(index));
      }
      for (func::CallOp call : calls[func]) {
        rewriter.setInsertionPoint(call);
        // The buffers of the allocated results, allocated here.
        SmallVector<Value> operands(call.getOperands());
        llvm::DenseMap<memref::AllocOp, Value> buffers;
        for (auto [alloc, arg] : outputs) {
          IRMapping map;
          SmallVector<Value> sizes;
          for (Value size : alloc.getDynamicSizes())
            sizes.push_back(computeAtCall(size, call, map, rewriter));
          auto buffer = memref::AllocOp::create(
              rewriter, alloc.getLoc(), alloc.getType(), sizes,
              alloc.getAlignmentAttr());
          buffers[alloc] = buffer;
          operands.push_back(buffer);
        }
        auto replacement =
            func::CallOp::create(rewriter, call.getLoc(), func, operands);
        replacement.setNoInline(call.getNoInline());
        replacement->setDiscardableAttrs(call->getDiscardableAttrDictionary());
        SmallVector<Value> results;
        unsigned next = 0;
        for (unsigned i = 0, e = call.getNumResults(); i < e; ++i) {
          if (!returned[i] && !allocated[i]) {
            results.push_back(replacement.getResult(next++));
            continue;
          }
          Value arg = returned[i] ? call.getOperand(returned[i].getArgNumber())
                                  : buffers.lookup(allocated[i]);
          Type type = call.getResult(i).getType();
          if (arg.getType() != type)
            arg = memref::CastOp::create(rewriter, call.getLoc(), type, arg);
          results.push_back(arg);
        }
        rewriter.replaceOp(call, results);
      }
      for (auto [alloc, arg] : outputs) {
        alloc.replaceAllUsesWith(arg);
        alloc.erase();
      }
    }
  }
};
} // namespace
