//===- UKernelAbi.h - The microkernel library's calling convention -*- C++
//-*-===//
//
// How code calls the prebuilt microkernel library (lib/UKernels): the
// symbols, one per instruction set and form, and their signature. The
// lowering of the microkernel ops (gptq-lower-ukernels) writes calls by it;
// the library's build checks its wrappers (lib/UKernels/Matmul.mlir)
// against it.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_CODEGEN_CPU_UKERNELABI_H
#define GPTQ_CODEGEN_CPU_UKERNELABI_H

#include "gptq/Codegen/CPU/CpuIsa.h"

#include "mlir/IR/BuiltinTypes.h"

#include <cstdint>
#include <string>

namespace mlir {
namespace gptq {

/// The arguments of the matrix microkernel, in order.
enum UKernelMatmulArgument : unsigned {
  kUKernelMatmulLhs,    // A: memref<?x?x?xf32, strided<[?, ?, 1], offset: ?>>
  kUKernelMatmulRhs,    // B (float32), same type; empty for a weight
  kUKernelMatmulInit,   // C, same type (a block of a larger matrix)
  kUKernelMatmulFlags,  // i32, ukernelMatmulFlags
  kUKernelMatmulPacked, // packed words: memref<?x?xi32>
  kUKernelMatmulScales, // memref<?x?xf32>
  kUKernelMatmulZeros,  // memref<?x?xf32>
  kUKernelMatmulGroups, // group index: memref<?xi32>
  kUKernelMatmulBF16,   // bfloat16 weight: memref<?x?xbf16>
  kUKernelMatmulF16,    // float16 weight: memref<?x?xf16>
  kUKernelMatmulArguments
};

/// The stored type of a half-precision weight in the flags.
constexpr unsigned kUKernelHalfBF16 = 1;
constexpr unsigned kUKernelHalfF16 = 2;

/// A variant of the matrix microkernel (gptq_ukernel.matmul's attributes).
struct UKernelMatmulVariant {
  bool transposeLhs = false;
  bool transposeRhs = false;
  bool zeroInit = false;
  bool lowerResult = false;
  bool lowerLhs = false;
  /// The width of a packed weight; 0 for none.
  unsigned bits = 0;
  /// kUKernelHalfBF16 or kUKernelHalfF16 for a half-precision weight; 0
  /// for none.
  unsigned half = 0;
};

/// The flags word of a variant: bits 0 to 4 transpose_lhs, transpose_rhs,
/// zero_init, lower_result, lower_lhs; bits 8 to 11 the width; bits 12
/// and 13 the half-precision type.
uint32_t ukernelMatmulFlags(const UKernelMatmulVariant &variant);

/// The signature of the matrix microkernel.
FunctionType ukernelMatmulType(MLIRContext *ctx);

/// The matrix microkernel built for the instruction set and decode form of
/// `forms`: gptq_uk_matmul_<isa>_<dots|tables> (the name of cpuIsaName with
/// '_' for '-'; dots: byte dot products in its 4-bit decode step, tables:
/// table lookups).
std::string ukernelMatmulSymbol(const CpuKernelForms &forms);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_CODEGEN_CPU_UKERNELABI_H
