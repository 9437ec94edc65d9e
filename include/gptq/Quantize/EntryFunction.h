//===- EntryFunction.h - The function a model pass works on -----*- C++ -*-===//
//
// The model-level passes (gptq-quantize-model, gptq-instrument-hessians,
// gptq-outline-calibration-stages) work on one function of the module, its
// entry: named by the pass's `entry` option, or found when the option is
// empty, as modules from other frontends name it otherwise (torch-mlir's
// @torch_jit, JAX's and IREE's @main).
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_QUANTIZE_ENTRYFUNCTION_H
#define GPTQ_QUANTIZE_ENTRYFUNCTION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

namespace mlir {
namespace gptq {

/// The entry function of `module`: the function named `entry` when that is
/// not empty (with a body or not: the caller says what it needs); else
/// @forward, the name our importers write, when it has a body; else the
/// only public function with a body; else a declared @forward, when there
/// is no public function with a body. The error names the functions with a
/// body that there are, and that `entry=NAME` chooses one.
llvm::Expected<func::FuncOp> findEntryFunction(ModuleOp module,
                                               llvm::StringRef entry);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_QUANTIZE_ENTRYFUNCTION_H
