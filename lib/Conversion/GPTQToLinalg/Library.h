//===- Library.h - The gptq lowering library --------------------*- C++ -*-===//
//
// The shape-generic implementations in Library.mlir, shared by the passes
// that call them (convert-gptq-to-linalg, gptq-matmul-to-kernel).
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_CONVERSION_GPTQTOLINALG_LIBRARY_H
#define GPTQ_CONVERSION_GPTQTOLINALG_LIBRARY_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir {
namespace gptq {

/// Calls `__gptq_<name>` on `operands` (tensors cast to dynamic shapes) and
/// casts the results back to `resultTypes`. With `noInline` the call is
/// kept out of line by the inliner.
SmallVector<Value> callLibrary(OpBuilder &b, Location loc, StringRef name,
                               ValueRange operands, TypeRange resultTypes,
                               bool noInline = false);

/// Copies the library functions that `module` calls, and those they call,
/// into the module as private functions. A symbol of the library's prefix
/// that is not one of its functions is an error.
LogicalResult addLibraryFunctions(ModuleOp module);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_CONVERSION_GPTQTOLINALG_LIBRARY_H
