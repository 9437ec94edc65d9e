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

/// The arguments of the factorization microkernel
/// (gptq_ukernel.damped_cholesky), in order; it returns i1, whether the
/// damped Hessian was positive definite.
enum UKernelCholeskyArgument : unsigned {
  kUKernelCholeskyHessian,  // H: memref<?x?xf32>
  kUKernelCholeskyPerm,     // the permutation: memref<?xi64>, empty for none
  kUKernelCholeskyFactor,   // the factor (written): memref<?x?xf32>
  kUKernelCholeskyFlags,    // i32: bit 0, H is permuted
  kUKernelCholeskyPercdamp, // f32
  kUKernelCholeskyBlock,    // i64, the block size
  kUKernelCholeskyArguments
};

/// The signature of the factorization microkernel.
FunctionType ukernelCholeskyType(MLIRContext *ctx);

/// The arguments of the quantize-and-compensate microkernel
/// (gptq_ukernel.quantize_blocks), in order; it returns f32, the loss.
enum UKernelQuantizeArgument : unsigned {
  kUKernelQuantizeWeight,    // W: memref<?x?xf32>
  kUKernelQuantizeFactor,    // U: memref<?x?xf32>
  kUKernelQuantizeScalesIn,  // fixed scales: memref<?x?xf32>, empty for none
  kUKernelQuantizeZerosIn,   // fixed zeros: memref<?x?xf32>
  kUKernelQuantizeGroupMap,  // each column's group: memref<?xi32>
  kUKernelQuantizePerm,      // W's column permutation: memref<?xi64>
  kUKernelQuantizeMask,      // the Hessian of the dead-input mask
  kUKernelQuantizeCodes,     // written: memref<?x?xi8>
  kUKernelQuantizeScales,    // written: memref<?x?xf32>
  kUKernelQuantizeZeros,     // written: memref<?x?xf32>
  kUKernelQuantizeFlags,     // i32, ukernelQuantizeFlags
  kUKernelQuantizeGroupSize, // i64, columns per group (>= 1)
  kUKernelQuantizeBlockSize, // i64
  kUKernelQuantizeMaxQ,      // f32, 2^bits - 1
  kUKernelQuantizeNorm,      // f32, the MSE search's norm
  kUKernelQuantizeSteps,     // i64, the MSE search's shrink steps
  kUKernelQuantizeGrid,      // f64, the MSE search's grid
  kUKernelQuantizeArguments
};

/// The flags word of the quantize-and-compensate microkernel's variant.
struct UKernelQuantizeVariant {
  bool fixedGrids = false;
  bool sym = false;
  bool mse = false;
  bool permuted = false;
  bool masked = false;
  bool permuteCodes = false;
};

/// Bits 0 to 5: fixed grids, symmetric, MSE search, W permuted, dead inputs
/// masked, codes returned in W's column order.
uint32_t ukernelQuantizeFlags(const UKernelQuantizeVariant &variant);

/// The signature of the quantize-and-compensate microkernel.
FunctionType ukernelQuantizeType(MLIRContext *ctx);

/// The library's symbol of the microkernel `kernel` (`damped_cholesky`,
/// `quantize_blocks`) built for `isa`: gptq_uk_<kernel>_<isa>, the name of
/// cpuIsaName with '_' for '-'. (The matrix kernel, built in two forms too,
/// is named by ukernelMatmulSymbol.)
std::string ukernelSymbol(llvm::StringRef kernel, CpuIsa isa);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_CODEGEN_CPU_UKERNELABI_H
