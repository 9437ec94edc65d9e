//===- MemoryEstimate.cpp - Memory a calibration stage holds --------------===//

#include "gptq/Quantize/MemoryEstimate.h"

#include "gptq/Dialect/GPTQ/IR/GPTQ.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "llvm/ADT/DenseMap.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::gptq;

uint64_t mlir::gptq::tensorBytes(Type type, int64_t lead, int64_t extent) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return 0;
  Type element = tensor.getElementType();
  uint64_t bytes = element.isIndex() ? 8
                   : element.isIntOrFloat()
                       ? (element.getIntOrFloatBitWidth() + 7) / 8
                       : 0;
  for (auto [i, dim] : llvm::enumerate(tensor.getShape())) {
    int64_t size =
        ShapedType::isDynamic(dim) ? (i == 0 ? lead : extent) : dim;
    bytes *= uint64_t(std::max<int64_t>(size, 0));
  }
  return bytes;
}

/// Ops whose result reads its source's buffer rather than a new one.
static bool isView(Operation *op) {
  return isa<tensor::ExtractSliceOp, tensor::CollapseShapeOp,
             tensor::ExpandShapeOp, tensor::CastOp, tensor::ReshapeOp>(op);
}

uint64_t mlir::gptq::peakIntermediateBytes(func::FuncOp fn, int64_t lead,
                                           int64_t extent) {
  if (fn.isExternal())
    return 0;
  Block &body = fn.getBody().front();
  // Each op's position, and each value's last reader (an op in a nested
  // region counts as its top-level ancestor); a view's readers keep its
  // source.
  llvm::DenseMap<Operation *, unsigned> position;
  std::vector<Operation *> ops;
  for (Operation &op : body) {
    position[&op] = ops.size();
    ops.push_back(&op);
  }
  llvm::DenseMap<Value, unsigned> lastUse;
  for (Operation *op : llvm::reverse(ops)) {
    for (Value result : op->getResults()) {
      unsigned last = position[op];
      for (Operation *user : result.getUsers()) {
        Operation *top = body.findAncestorOpInBlock(*user);
        if (top)
          last = std::max(last, position[top]);
      }
      lastUse[result] = std::max(lastUse.lookup(result), last);
    }
    if (isView(op) && op->getNumOperands())
      lastUse[op->getOperand(0)] =
          std::max(lastUse.lookup(op->getOperand(0)), lastUse[op->getResult(0)]);
  }
  // Bytes held by each value (views and Hessians hold none; a result that
  // takes over its destination holds the destination's).
  llvm::DenseMap<Value, uint64_t> held;
  std::vector<std::vector<Value>> freedAfter(ops.size());
  uint64_t live = 0, peak = 0;
  for (auto [i, op] : llvm::enumerate(ops)) {
    auto dps = dyn_cast<DestinationStyleOpInterface>(op);
    for (OpResult result : op->getResults()) {
      uint64_t bytes = tensorBytes(result.getType(), lead, extent);
      if (isView(op) || isa<HessianAccumulateOp>(op))
        bytes = 0;
      if (dps && bytes) {
        Value init = dps.getTiedOpOperand(result)->get();
        auto it = held.find(init);
        if (it != held.end() && lastUse.lookup(init) == i) {
          // In place: the destination's bytes become the result's.
          live -= it->second;
          held.erase(it);
        }
      }
      live += bytes;
      held[result] = bytes;
      freedAfter[lastUse.lookup(result)].push_back(result);
    }
    peak = std::max(peak, live);
    for (Value v : freedAfter[i])
      if (auto it = held.find(v); it != held.end()) {
        live -= it->second;
        held.erase(it);
      }
  }
  return peak;
}

uint64_t mlir::gptq::quantizerWorkspaceBytes(int64_t out, int64_t in) {
  uint64_t cells = uint64_t(out) * uint64_t(in);
  return uint64_t(in) * uint64_t(in) * 4 + cells * 4 + cells;
}

uint64_t mlir::gptq::layerErrorBytes(int64_t out, int64_t in,
                                     uint64_t bandBytes) {
  uint64_t cells = uint64_t(out) * uint64_t(in);
  return uint64_t(in) * uint64_t(in) * 4 + cells * 4 + cells * 5 +
         2 * std::min<uint64_t>(bandBytes, cells * 4);
}
