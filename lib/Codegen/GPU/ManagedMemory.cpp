//===- ManagedMemory.cpp - Host buffers in CUDA managed memory -----------===//

#include "gptq/Codegen/GPU/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQMANAGEDMEMORY
#include "gptq/Codegen/GPU/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {

/// Frees `buffer` on a fresh stream and waits for it (gpu.dealloc must be
/// asynchronous).
void freeManaged(OpBuilder &b, Location loc, Value buffer) {
  Type token = gpu::AsyncTokenType::get(b.getContext());
  Value start = gpu::WaitOp::create(b, loc, token, ValueRange{}).getAsyncToken();
  auto dealloc = gpu::DeallocOp::create(b, loc, token, ValueRange{start}, buffer);
  gpu::WaitOp::create(b, loc, Type(), ValueRange{dealloc.getAsyncToken()});
}

/// Replaces every use of `value` by a managed buffer of its shape (identity
/// layout) filled from it, made at the builder's insertion point; returns
/// the buffer.
Value replaceByManagedCopy(OpBuilder &b, Location loc, Value value) {
  auto type = cast<MemRefType>(value.getType());
  SmallPtrSet<Operation *, 4> readers;
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d)) {
      auto dim = memref::DimOp::create(b, loc, value, d);
      readers.insert(dim);
      sizes.push_back(dim);
    }
  auto target = MemRefType::get(type.getShape(), type.getElementType());
  auto alloc = gpu::AllocOp::create(b, loc, target, /*asyncToken=*/Type(),
                                    ValueRange{}, sizes, ValueRange{},
                                    /*hostShared=*/true);
  readers.insert(memref::CopyOp::create(b, loc, value, alloc.getMemref()));
  value.replaceAllUsesExcept(alloc.getMemref(), readers);
  return alloc.getMemref();
}

/// A buffer that only host code reads and writes element by element and
/// that gives a memref.reshape its shape: it stays in host memory, where
/// the reshape's lowering reads it.
bool isHostMetadata(memref::AllocOp op) {
  bool givesShape = false;
  for (OpOperand &use : op->getUses()) {
    Operation *user = use.getOwner();
    if (auto reshape = dyn_cast<memref::ReshapeOp>(user)) {
      if (use.get() != reshape.getShape())
        return false;
      givesShape = true;
      continue;
    }
    // Stores into it (not of it), loads, and its deallocation.
    auto store = dyn_cast<memref::StoreOp>(user);
    if (store ? store.getValueToStore() == use.get()
              : !isa<memref::LoadOp, memref::DeallocOp>(user))
      return false;
  }
  return givesShape;
}

struct GPTQManagedMemoryPass
    : gptq::impl::GPTQManagedMemoryBase<GPTQManagedMemoryPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      if (failed(convert(func)))
        return signalPassFailure();
    }
  }

  LogicalResult convert(func::FuncOp func) {
    Block &entry = func.getBody().front();
    OpBuilder b = OpBuilder::atBlockBegin(&entry);
    SmallVector<Value> copies;

    // Constants first, hoisted to the entry: they have no operands.
    SmallVector<memref::GetGlobalOp> globals;
    func.walk([&](memref::GetGlobalOp op) { globals.push_back(op); });
    for (memref::GetGlobalOp op : globals) {
      op->moveBefore(&entry, entry.begin());
      if (op->use_empty())
        continue;
      b.setInsertionPointAfter(op);
      copies.push_back(replaceByManagedCopy(b, op.getLoc(), op.getResult()));
    }
    if (func.isPublic()) {
      b.setInsertionPointToStart(&entry);
      for (BlockArgument arg : entry.getArguments()) {
        auto type = dyn_cast<MemRefType>(arg.getType());
        if (!type || arg.use_empty())
          continue;
        if (!type.getLayout().isIdentity())
          return func.emitError()
                 << "gptq-managed-memory: argument " << arg.getArgNumber()
                 << " has a non-identity layout";
        copies.push_back(replaceByManagedCopy(b, func.getLoc(), arg));
      }
    }

    SmallVector<memref::AllocOp> allocs;
    SmallVector<memref::DeallocOp> deallocs;
    func.walk([&](Operation *op) {
      if (op->getParentOfType<gpu::LaunchOp>())
        return;
      if (auto alloc = dyn_cast<memref::AllocOp>(op))
        allocs.push_back(alloc);
      else if (auto dealloc = dyn_cast<memref::DeallocOp>(op))
        deallocs.push_back(dealloc);
    });
    for (memref::AllocOp op : allocs) {
      if (isHostMetadata(op))
        continue;
      b.setInsertionPoint(op);
      auto alloc = gpu::AllocOp::create(
          b, op.getLoc(), op.getType(), /*asyncToken=*/Type(), ValueRange{},
          op.getDynamicSizes(), op.getSymbolOperands(), /*hostShared=*/true);
      op.getResult().replaceAllUsesWith(alloc.getMemref());
      op->erase();
    }
    for (memref::DeallocOp op : deallocs) {
      // A memref.alloc left is a host metadata buffer, kept on the host.
      if (op.getMemref().getDefiningOp<memref::AllocOp>())
        continue;
      b.setInsertionPoint(op);
      freeManaged(b, op.getLoc(), op.getMemref());
      op->erase();
    }
    func.walk([&](func::ReturnOp ret) {
      b.setInsertionPoint(ret);
      for (Value copy : copies)
        freeManaged(b, ret.getLoc(), copy);
    });
    return success();
  }
};

} // namespace
