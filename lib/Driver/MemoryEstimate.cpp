//===- MemoryEstimate.cpp - Memory a calibration stage holds --------------===//

#include "gptq/Driver/MemoryEstimate.h"

#include "gptq/Dialect/GPTQ/IR/GPTQ.h"
#include "gptq/Quantize/ExpertDispatch.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
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

//===----------------------------------------------------------------------===//
// The sizes of an entry's dynamic dimensions
//===----------------------------------------------------------------------===//

EntryShapes::EntryShapes(func::FuncOp entry, int64_t lead, int64_t extent)
    : lead(lead), extent(extent) {
  if (entry.isExternal())
    return;
  for (Operation *op : dispatchSlices(entry.getBody().front())) {
    auto slice = cast<tensor::ExtractSliceOp>(op);
    ++slicesOf[slice.getSource()];
    shareOf[slice.getSizes()[0]] = slice.getSource();
  }
}

uint64_t EntryShapes::bytes(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type)
    return 0;
  uint64_t bytes = tensorBytes(RankedTensorType::get({}, type.getElementType()),
                               lead, extent);
  for (unsigned i = 0; i < type.getRank(); ++i)
    bytes *= uint64_t(
        std::max<int64_t>(dim(value, i).value_or(i == 0 ? lead : extent), 0));
  return bytes;
}

std::optional<int64_t> EntryShapes::index(Value value) {
  if (auto it = indices.find(value); it != indices.end())
    return it->second;
  std::optional<int64_t> result;
  Operation *def = value.getDefiningOp();
  if (Value matrix = shareOf.lookup(value)) {
    // Rows a dispatch gives one expert (read from data): its share of the
    // matrix's.
    ++depth;
    if (std::optional<int64_t> rows = dim(matrix, 0)) {
      int64_t n = slicesOf.lookup(matrix);
      result = (*rows + n - 1) / n;
    }
    --depth;
  } else if (!def || depth > 64) {
    // An argument, or a chain too long to follow.
  } else if (auto constant = dyn_cast<arith::ConstantIndexOp>(def)) {
    result = constant.value();
  } else if (auto dimOp = dyn_cast<tensor::DimOp>(def)) {
    if (std::optional<int64_t> at = dimOp.getConstantIndex())
      if (*at >= 0 && *at < dimOp.getSource().getType().getRank())
        result = dim(dimOp.getSource(), unsigned(*at));
  } else if (isa<arith::MulIOp, arith::AddIOp, arith::SubIOp>(def)) {
    ++depth;
    std::optional<int64_t> a = index(def->getOperand(0));
    std::optional<int64_t> b = a ? index(def->getOperand(1)) : std::nullopt;
    --depth;
    if (a && b)
      result = isa<arith::MulIOp>(def)   ? *a * *b
               : isa<arith::AddIOp>(def) ? *a + *b
                                         : *a - *b;
  } else if (auto cast = dyn_cast<arith::IndexCastOp>(def)) {
    ++depth;
    result = index(cast.getIn());
    --depth;
  }
  indices[value] = result;
  return result;
}

std::optional<int64_t> EntryShapes::dim(Value tensor, unsigned i) {
  auto type = cast<RankedTensorType>(tensor.getType());
  if (!type.isDynamicDim(i))
    return type.getDimSize(i);
  std::pair<Value, unsigned> key(tensor, i);
  if (auto it = dims.find(key); it != dims.end())
    return it->second;
  if (depth > 64)
    return std::nullopt;
  ++depth;
  std::optional<int64_t> size;
  Operation *def = tensor.getDefiningOp();
  auto sizeOf = [&](OpFoldResult r) -> std::optional<int64_t> {
    if (auto attr = dyn_cast<Attribute>(r))
      return cast<IntegerAttr>(attr).getInt();
    return index(cast<Value>(r));
  };
  if (!def) {
    size = i == 0 ? lead : extent;
  } else if (auto empty = dyn_cast<tensor::EmptyOp>(def)) {
    size = index(empty.getDynamicSize(i));
  } else if (auto slice = dyn_cast<tensor::ExtractSliceOp>(def)) {
    if (slice.getSourceType().getRank() == type.getRank()) {
      size = sizeOf(slice.getMixedSizes()[i]);
    }
  } else if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(def)) {
    size = 1;
    for (int64_t j : collapse.getReassociationIndices()[i]) {
      std::optional<int64_t> part = dim(collapse.getSrc(), unsigned(j));
      size = part ? std::optional<int64_t>(*size * *part) : std::nullopt;
      if (!size)
        break;
    }
  } else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(def)) {
    size = sizeOf(expand.getMixedOutputShape()[i]);
  } else if (auto castOp = dyn_cast<tensor::CastOp>(def)) {
    if (cast<RankedTensorType>(castOp.getSource().getType()).getRank() ==
        type.getRank())
      size = dim(castOp.getSource(), i);
  } else if (auto dps = dyn_cast<DestinationStyleOpInterface>(def)) {
    if (OpOperand *init = dps.getTiedOpOperand(cast<OpResult>(tensor)))
      size = dim(init->get(), i);
  }
  --depth;
  dims[key] = size;
  return size;
}
