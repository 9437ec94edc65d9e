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
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir {
namespace gptq {

/// The entry function of `module`, with a body: the function named `entry`
/// when that is not empty; else @forward, the name our importers write,
/// when it has a body; else the only public function with a body; else a
/// declared @forward, when there is no public function with a body. What
/// is wrong goes to `fail` (at the module when there is no such function,
/// naming the functions with a body and `entry=NAME`; at the function when
/// it is a declaration), and the result is failure.
FailureOr<func::FuncOp>
findEntryFunction(ModuleOp module, llvm::StringRef entry,
                  llvm::function_ref<InFlightDiagnostic(Location)> fail);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_QUANTIZE_ENTRYFUNCTION_H
