//===- ExpandStridedCopies.cpp - Strided memref.copy to linalg.copy -------===//

#include "gptq/Codegen/Common/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQEXPANDSTRIDEDCOPIES
#include "gptq/Codegen/Common/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {
struct GPTQExpandStridedCopiesPass
    : gptq::impl::GPTQExpandStridedCopiesBase<GPTQExpandStridedCopiesPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation()->walk([&](memref::CopyOp op) {
      auto source = dyn_cast<MemRefType>(op.getSource().getType());
      auto target = dyn_cast<MemRefType>(op.getTarget().getType());
      // Ranked memrefs of rank >= 1 only; those with identity layouts on
      // both sides become memcpy anyway (unless `identity`).
      if (!source || !target || source.getRank() == 0 ||
          (!identity && source.getLayout().isIdentity() &&
           target.getLayout().isIdentity()))
        return;
      copies.push_back(op);
    });
    for (memref::CopyOp op : copies) {
      OpBuilder b(op);
      linalg::CopyOp::create(b, op.getLoc(), op.getSource(), op.getTarget());
      op->erase();
    }
  }
};
} // namespace
