//===- ExpertDispatch.cpp - The rows a mixture of experts dispatches ------===//
//
// Recognizes the slices a dispatch gives each expert, and the values computed
// row by row from them (ExpertDispatch.h).
//
//===----------------------------------------------------------------------===//

#include "gptq/Quantize/ExpertDispatch.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace mlir::gptq;

/// A slice of whole rows: `source[offset, 0..][size, full..]` with dynamic
/// offset and size along dimension 0, unit strides and every other dimension
/// whole and static.
static bool isRowSlice(tensor::ExtractSliceOp slice) {
  RankedTensorType source = slice.getSourceType();
  int64_t rank = source.getRank();
  if (rank < 2 || slice.getResultType().getRank() != rank ||
      !ShapedType::isDynamic(slice.getStaticOffsets()[0]) ||
      !ShapedType::isDynamic(slice.getStaticSizes()[0]) ||
      !slice.getResultType().isDynamicDim(0))
    return false;
  for (int64_t d = 0; d < rank; ++d)
    if (slice.getStaticStrides()[d] != 1)
      return false;
  for (int64_t d = 1; d < rank; ++d)
    if (source.isDynamicDim(d) || slice.getStaticOffsets()[d] != 0 ||
        slice.getStaticSizes()[d] != source.getDimSize(d))
      return false;
  return true;
}

llvm::DenseSet<Operation *> mlir::gptq::dispatchSlices(Block &body) {
  llvm::MapVector<Value, SmallVector<Operation *>> bySource;
  for (Operation &op : body)
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op);
        slice && isRowSlice(slice))
      bySource[slice.getSource()].push_back(&op);
  llvm::DenseSet<Operation *> slices;
  for (auto &[source, readers] : bySource)
    if (readers.size() >= 2)
      slices.insert(readers.begin(), readers.end());
  return slices;
}

std::optional<unsigned> mlir::gptq::rowLoop(linalg::LinalgOp op,
                                            OpOperand &operand) {
  AffineMap map = op.getMatchingIndexingMap(&operand);
  if (map.getNumResults() == 0)
    return std::nullopt;
  auto dim = dyn_cast<AffineDimExpr>(map.getResult(0));
  if (!dim)
    return std::nullopt;
  for (AffineExpr e : map.getResults().drop_front())
    if (e.isFunctionOfDim(dim.getPosition()))
      return std::nullopt;
  return dim.getPosition();
}

bool mlir::gptq::computesRowByRow(linalg::LinalgOp op,
                                  llvm::function_ref<bool(Value)> rowsOf) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInits() == 0)
    return false;
  std::optional<unsigned> loop;
  for (OpOperand *in : op.getDpsInputOperands()) {
    if (!rowsOf(in->get()))
      continue;
    std::optional<unsigned> at = rowLoop(op, *in);
    if (!at || (loop && *loop != *at))
      return false;
    loop = at;
  }
  if (!loop ||
      op.getIteratorTypesArray()[*loop] != utils::IteratorType::parallel)
    return false;
  bool indexed = false;
  op->walk([&](linalg::IndexOp) { indexed = true; });
  if (indexed)
    return false;
  for (OpOperand *in : op.getDpsInputOperands())
    if (!rowsOf(in->get()) && op.getMatchingIndexingMap(in).isFunctionOfDim(*loop))
      return false;
  for (OpOperand &init : op.getDpsInitsMutable())
    if (rowLoop(op, init) != loop)
      return false;
  return llvm::all_of(op->getResults(), [](Value result) {
    return cast<RankedTensorType>(result.getType()).isDynamicDim(0);
  });
}

llvm::DenseSet<Value> mlir::gptq::routedRows(Block &body) {
  llvm::DenseSet<Value> rows;
  llvm::DenseSet<Operation *> slices = dispatchSlices(body);
  auto rowsOf = [&](Value v) { return rows.contains(v); };
  for (Operation &op : body) {
    if (slices.contains(&op)) {
      rows.insert(op.getResult(0));
      continue;
    }
    auto linalgOp = dyn_cast<linalg::LinalgOp>(&op);
    if (linalgOp && computesRowByRow(linalgOp, rowsOf))
      rows.insert(op.result_begin(), op.result_end());
  }
  return rows;
}
