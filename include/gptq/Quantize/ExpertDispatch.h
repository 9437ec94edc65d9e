//===- ExpertDispatch.h - The rows a mixture of experts dispatches -*- C++ -*-===//
//
// How the model passes recognize the experts of a mixture of experts in IR:
// a dispatch sorts the (token, choice) pairs by expert into the rows of one
// matrix and gives each expert a slice of them, rows [offset, offset +
// count) of dynamic offset and count (as import-hf writes Mixtral's block);
// an expert's layers compute on those rows row by row.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_QUANTIZE_EXPERTDISPATCH_H
#define GPTQ_QUANTIZE_EXPERTDISPATCH_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Block.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>

namespace mlir {
namespace gptq {

/// The slices of the rows of a dispatch in `body`: `tensor.extract_slice`s
/// of whole rows (dynamic offset and size along dimension 0, unit strides,
/// every other dimension whole and static) of a matrix that at least two of
/// them read.
llvm::DenseSet<Operation *> dispatchSlices(Block &body);

/// The loop of `op` that indexes dimension 0 of `operand`, when no other
/// dimension of it depends on that loop.
std::optional<unsigned> rowLoop(linalg::LinalgOp op, OpOperand &operand);

/// Whether `op` computes its results row by row from its inputs for which
/// `rowsOf` holds: a linalg op on tensors, without `linalg.index`, whose
/// row-aligned inputs (those `rowsOf` holds for) index dimension 0 by one
/// parallel loop that its other inputs do not depend on and that indexes
/// dimension 0 of every init and result.
bool computesRowByRow(linalg::LinalgOp op,
                      llvm::function_ref<bool(Value)> rowsOf);

/// The values of `body` computed row by row from the rows of a dispatch (the
/// slices' results and what computesRowByRow makes of them): the inputs of
/// the experts' layers among them.
llvm::DenseSet<Value> routedRows(Block &body);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_QUANTIZE_EXPERTDISPATCH_H
