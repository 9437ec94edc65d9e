//===- HoistDeallocs.cpp - Free buffers right after their last use --------===//

#include "gptq/Codegen/Common/Passes.h"

#include "mlir/Dialect/Bufferization/Transforms/BufferViewFlowAnalysis.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQHOISTDEALLOCS
#include "gptq/Codegen/Common/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {
struct GPTQHoistDeallocsPass
    : gptq::impl::GPTQHoistDeallocsBase<GPTQHoistDeallocsPass> {
  void runOnOperation() override {
    SmallVector<memref::DeallocOp> deallocs;
    getOperation()->walk([&](memref::DeallocOp op) {
      auto alloc = op.getMemref().getDefiningOp<memref::AllocOp>();
      if (alloc && alloc->getBlock() == op->getBlock())
        deallocs.push_back(op);
    });
    if (deallocs.empty())
      return;
    BufferViewFlowAnalysis aliases(getOperation());
    for (memref::DeallocOp dealloc : deallocs) {
      Block *block = dealloc->getBlock();
      Operation *last = dealloc.getMemref().getDefiningOp();
      bool movable = true;
      for (Value alias : aliases.resolve(dealloc.getMemref())) {
        for (Operation *user : alias.getUsers()) {
          if (user == dealloc)
            continue;
          Operation *ancestor = block->findAncestorOpInBlock(*user);
          // A use outside the block, or by the block's terminator (the
          // buffer escapes), or a second dealloc: leave it as it is.
          if (!ancestor || ancestor->hasTrait<OpTrait::IsTerminator>() ||
              isa<memref::DeallocOp>(user)) {
            movable = false;
            break;
          }
          if (last->isBeforeInBlock(ancestor))
            last = ancestor;
        }
        if (!movable)
          break;
      }
      if (movable && last->isBeforeInBlock(dealloc))
        dealloc->moveAfter(last);
    }
  }
};
} // namespace
