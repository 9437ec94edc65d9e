//===- SpecializeConstantArguments.cpp - Constant arguments into callees --===//
//
// The library's kernels take their variants (transposes, quantized or not,
// bits, float16 or bfloat16 weights) as arguments, and modules pass them as
// constants: this pass makes each private callee's body use the integer
// constants its calls pass, in place or in a copy per pattern, so that
// canonicalization drops the variants that no call asks for.
//
//===----------------------------------------------------------------------===//

#include "gptq/Codegen/Common/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/MapVector.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQSPECIALIZECONSTANTARGUMENTS
#include "gptq/Codegen/Common/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {

/// The integer (index, i1) constant `v` is, or null.
TypedAttr integerConstant(Value v) {
  auto constant = v.getDefiningOp<arith::ConstantOp>();
  if (!constant || !isa<IntegerType, IndexType>(constant.getType()))
    return nullptr;
  return constant.getValue();
}

/// The constants a call passes, one entry per argument (null: not one).
using Pattern = SmallVector<TypedAttr>;

Pattern patternOf(func::CallOp call) {
  Pattern pattern;
  for (Value operand : call.getOperands())
    pattern.push_back(integerConstant(operand));
  return pattern;
}

bool hasConstant(const Pattern &pattern) {
  return llvm::any_of(pattern, [](TypedAttr a) { return a != nullptr; });
}

/// Makes `f`'s body use the constants of `pattern` for its arguments.
void substitute(func::FuncOp f, const Pattern &pattern) {
  Block &entry = f.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  for (auto [argument, value] : llvm::zip_equal(entry.getArguments(), pattern))
    if (value && !argument.use_empty())
      argument.replaceAllUsesWith(
          arith::ConstantOp::create(b, f.getLoc(), value));
}

struct GPTQSpecializeConstantArgumentsPass
    : gptq::impl::GPTQSpecializeConstantArgumentsBase<
          GPTQSpecializeConstantArgumentsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    // The calls of each private function with a body, by pattern, in the
    // order they appear; functions that are referenced other than by calls
    // (their address taken) are left alone.
    llvm::MapVector<func::FuncOp,
                    llvm::MapVector<Pattern, SmallVector<func::CallOp>>>
        callsOf;
    DenseSet<Operation *> otherwiseUsed;
    module.walk([&](Operation *op) {
      auto call = dyn_cast<func::CallOp>(op);
      if (!call) {
        for (NamedAttribute attr : op->getAttrs())
          attr.getValue().walk([&](SymbolRefAttr ref) {
            if (Operation *f = symbols.lookup(ref.getRootReference()))
              otherwiseUsed.insert(f);
          });
        return;
      }
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (!callee || !callee.isPrivate() || callee.isExternal())
        return;
      callsOf[callee][patternOf(call)].push_back(call);
    });
    for (auto &[f, byPattern] : callsOf) {
      if (otherwiseUsed.contains(f))
        continue;
      // Arguments that every call passes as the same constant: those the
      // function itself can take.
      Pattern common = byPattern.begin()->first;
      for (auto &[pattern, calls] : byPattern)
        for (auto [c, p] : llvm::zip_equal(common, pattern))
          if (c != p)
            c = nullptr;
      substitute(f, common);
      // A copy per pattern with constants beyond the common ones.
      for (auto &[pattern, calls] : byPattern) {
        Pattern extra = pattern;
        for (auto [e, c] : llvm::zip_equal(extra, common))
          if (c)
            e = nullptr;
        if (!hasConstant(extra))
          continue;
        auto copy = cast<func::FuncOp>(f->clone());
        symbols.insert(copy, std::next(Block::iterator(f)));
        substitute(copy, extra);
        for (func::CallOp call : calls)
          call.setCallee(copy.getSymName());
      }
    }
  }
};

} // namespace
