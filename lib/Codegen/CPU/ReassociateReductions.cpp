//===- ReassociateReductions.cpp - Reassociable linalg reductions ---------===//

#include "gptq/Codegen/CPU/Passes.h"
#include "gptq/Dialect/GPTQ/IR/GPTQ.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQREASSOCIATEREDUCTIONS
#include "gptq/Codegen/CPU/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {
struct GPTQReassociateReductionsPass
    : gptq::impl::GPTQReassociateReductionsBase<GPTQReassociateReductionsPass> {
  void runOnOperation() override {
    // The library's kernels keep the reference's order (and minimum's
    // signed zeros): only a module's own reductions are marked.
    if (getOperation()->hasAttr(gptq::kLibraryFunctionAttr))
      return;
    getOperation()->walk([](linalg::GenericOp op) {
      if (op.getNumReductionLoops() == 0)
        return;
      for (Value v : op.getBlock()->getTerminator()->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (!isa_and_nonnull<arith::AddFOp, arith::MulFOp, arith::MaximumFOp,
                             arith::MinimumFOp, arith::MaxNumFOp,
                             arith::MinNumFOp>(def))
          continue;
        // LLVM vectorizes a maximum of masked elements (softmax's causal
        // row maximum) only in the form that skips NaN.
        if (isa<arith::MaximumFOp, arith::MinimumFOp>(def)) {
          OpBuilder b(def);
          Operation *skip =
              isa<arith::MaximumFOp>(def)
                  ? arith::MaxNumFOp::create(b, def->getLoc(),
                                             def->getOperand(0),
                                             def->getOperand(1))
                        .getOperation()
                  : arith::MinNumFOp::create(b, def->getLoc(),
                                             def->getOperand(0),
                                             def->getOperand(1))
                        .getOperation();
          def->replaceAllUsesWith(skip);
          def->erase();
          def = skip;
        }
        auto fastmath = cast<arith::ArithFastMathInterface>(def);
        fastmath->setAttr(
            fastmath.getFastMathAttrName(),
            arith::FastMathFlagsAttr::get(
                op.getContext(), fastmath.getFastMathFlagsAttr().getValue() |
                                     arith::FastMathFlags::reassoc |
                                     arith::FastMathFlags::contract));
      }
    });
  }
};
} // namespace
