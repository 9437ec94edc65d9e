//===- ChunkKernels.h - Packed-code steps of the rows kernel ----*- C++ -*-===//
//
// KernelsCPU.mlir's __gptq_matmul_rows_qk (a decode step's product with a
// weight packed at 2 to 7 bits) calls, for each chunk of 512 columns of
// four rows, __gptq_chunk_step(%bits, %xp, %mm, %ch, %qw, %row0 .. %row3,
// %xsum, %s0 .. %s3, %z0 .. %z3, %u0 .. %u3) -> 4 x vector<16xf32>, which
// calls the kernel of the width, __gptq_chunk_b<bits>: lane i takes
// columns 32 i .. 32 i + 31 of the chunk, whose codes are words bits * i ..
// bits * i + bits - 1 of it (the packing's bit stream); the lane's sum P of
// codes times activations (%xp[%mm, %ch, t, i], column t of lane i, scaled
// by 2^-o for a code at bit o of its word) gives s * (P - z * xsum) with
// its scale, zero and activations' sum, added to its row's accumulator.
// The microkernel library (lib/UKernels) has every width;
// __gptq_chunk_widths(%bits) tells __gptq_matmul which ones are there.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_CONVERSION_GPTQTOLINALG_CHUNKKERNELS_H
#define GPTQ_CONVERSION_GPTQTOLINALG_CHUNKKERNELS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"

namespace mlir {
namespace gptq {

/// The widths with a chunk kernel (8 bits has its own rows kernel).
constexpr unsigned kChunkKernelMinBits = 2;
constexpr unsigned kChunkKernelMaxBits = 7;

/// The prefix of the functions written out here.
constexpr const char kChunkKernelPrefix[] = "__gptq_chunk_";

/// The functions above (private func.func ops) in a new module, with a
/// kernel for each of `widths` (each from kChunkKernelMinBits to
/// kChunkKernelMaxBits).
OwningOpRef<ModuleOp> buildChunkKernels(MLIRContext *ctx,
                                        ArrayRef<unsigned> widths);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_CONVERSION_GPTQTOLINALG_CHUNKKERNELS_H
