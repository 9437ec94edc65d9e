//===- ChunkKernels.h - Packed-code steps of the rows kernel ----*- C++ -*-===//
//
// KernelsCPU.mlir's __gptq_matmul_rows_qk (a decode step's product with a
// weight packed at 2 to 7 bits) calls, for each chunk of 512 columns of
// four rows, __gptq_rows_qk_chunk_b<bits>(%xp, %mm, %ch, %qw, %row0 ..
// %row3, %s0 .. %s3, %z0 .. %z3, %u0 .. %u3) -> 4 x vector<16xf32>: lane i
// takes columns 32 i .. 32 i + 31 of the chunk, whose codes are words
// bits * i .. bits * i + bits - 1 of it (the packing's bit stream), and adds
// their dequantized weights, s * (code - z) with the lane's scale and zero,
// times the activations %xp[%mm, %ch, t, i] (column t of lane i) to its
// row's accumulator.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_CONVERSION_GPTQTOLINALG_CHUNKKERNELS_H
#define GPTQ_CONVERSION_GPTQTOLINALG_CHUNKKERNELS_H

#include <string>

namespace mlir {
namespace gptq {

/// The widths with a chunk kernel (8 bits has its own rows kernel).
constexpr unsigned kChunkKernelMinBits = 2;
constexpr unsigned kChunkKernelMaxBits = 7;

/// The names of the chunk kernels: this, then the width.
constexpr const char kChunkKernelPrefix[] = "__gptq_rows_qk_chunk_b";

/// The chunk kernels of every width, as MLIR source (func.func ops).
std::string chunkKernelsSource();

} // namespace gptq
} // namespace mlir

#endif // GPTQ_CONVERSION_GPTQTOLINALG_CHUNKKERNELS_H
