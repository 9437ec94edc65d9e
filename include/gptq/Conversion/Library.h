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

/// Which forms of the CPU kernels' target-dependent steps a module gets
/// (KernelsX86.mlir): those of `isa`, and with `byteDots` the 4-bit decode
/// kernel's byte dot products (the instruction where `isa` has it, else
/// portable operations).
struct CpuKernelForms {
  CpuIsa isa = CpuIsa::Generic;
  bool byteDots = false;
};

/// The forms for `isa`: byte dot products where it has AVX-512 VNNI.
inline CpuKernelForms defaultKernelForms(CpuIsa isa) {
  return {isa, isa == CpuIsa::AVX512VNNI};
}

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

/// The forms that the passes' options `cpu-isa` (an instruction set of
/// CpuIsa.h, or "host") and `byte-dots` ("auto": where the instruction set
/// has AVX-512 VNNI; "on"; "off") name, or an error naming the bad one.
FailureOr<CpuKernelForms> kernelFormsOfOptions(Operation *op, StringRef isa,
                                               StringRef byteDots);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_CONVERSION_LIBRARY_H
