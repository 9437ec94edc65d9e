//===- ArgumentParameters.h - Weights passed as arguments -------*- C++ -*-===//
//
// A model written as `jax.jit(apply).lower(params, x)` takes its weights as
// arguments: gptq-quantize-model's `parameters=FILE` (a .safetensors or
// .npz archive) says where their values are. An argument is bound to the
// archive's tensor of its name: its location name (`params['dense']
// ['kernel']`, as JAX prints argument locations with debug info), or
// `arg<i>` for its place. For the pass, each bound argument is a constant
// of the archive's values (so that its layers are found, calibrated and
// rewritten) and the function takes only its other arguments; afterwards
// the bound arguments are put back in their places, unread: callers pass
// what they passed before, and the quantized weights (and the other bound
// values) are constants of the module.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_DRIVER_ARGUMENTPARAMETERS_H
#define GPTQ_DRIVER_ARGUMENTPARAMETERS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace mlir {
namespace gptq {

/// The arguments a parameter archive bound: what it takes to put each back.
struct BoundArguments {
  struct Argument {
    unsigned index;
    Type type;
    DictionaryAttr attrs;
    Location loc;
    std::string key;
  };
  llvm::SmallVector<Argument> arguments;
};

/// Binds the arguments of `func` to the tensors of the archive `path` (see
/// above): replaces each bound argument's uses with a constant that reads
/// the archive's tensor in place (or a copy, when it is not aligned for its
/// elements) and erases the argument. Fails, through `fail`, when the
/// archive cannot be read, a tensor names no argument, an argument's type
/// is not the tensor's dtype and shape, or nothing is bound.
FailureOr<BoundArguments>
bindArgumentParameters(func::FuncOp func, llvm::StringRef path,
                       llvm::function_ref<InFlightDiagnostic(Location)> fail);

/// Puts the arguments `bound` erased back in their places, unread.
LogicalResult restoreBoundArguments(func::FuncOp func,
                                    const BoundArguments &bound);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_DRIVER_ARGUMENTPARAMETERS_H
