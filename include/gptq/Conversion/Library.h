//===- Library.h - The gptq lowering library --------------------*- C++ -*-===//
//
// The shape-generic implementations in Library.mlir and the kernel files,
// added to the modules that call them (convert-gptq-to-linalg) and to the
// microkernel library's wrappers (lib/UKernels).
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_CONVERSION_LIBRARY_H
#define GPTQ_CONVERSION_LIBRARY_H

#include "gptq/Codegen/CPU/CpuIsa.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>

namespace mlir {
namespace gptq {

/// Calls `__gptq_<name>` on `operands` (tensors cast to dynamic shapes) and
/// casts the results back to `resultTypes`. With `noInline` the call is
/// kept out of line by the inliner.
SmallVector<Value> callLibrary(OpBuilder &b, Location loc, StringRef name,
                               ValueRange operands, TypeRange resultTypes,
                               bool noInline = false);

/// Which kernel file completes the library's algorithms: the CPU schedule's
/// tuned kernels (KernelsCPU.mlir) or one plain linalg op per kernel
/// (KernelsPortable.mlir).
enum class LibraryKernels { CPU, Portable };

/// "cpu" or "portable"; nothing for any other name.
std::optional<LibraryKernels> parseLibraryKernels(StringRef name);

/// Copies the library functions that `module` calls, and those they call,
/// into the module as private functions, with the given kernels (and with
/// the CPU kernels, the forms `forms` chooses). A symbol of the library's
/// prefix that is not one of its functions is an error.
LogicalResult addLibraryFunctions(ModuleOp module,
                                  LibraryKernels kernels = LibraryKernels::CPU,
                                  const CpuKernelForms &forms = {});

/// Gives each library function of `module` that has a form with target
/// instructions for `isa` (KernelsX86.mlir) that form as its body, and lets
/// it be inlined. Run once the module's buffers are placed: the
/// deallocation passes take no llvm.call_intrinsic.
LogicalResult selectKernelForms(ModuleOp module, CpuIsa isa);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_CONVERSION_LIBRARY_H
