//===- TableLookups.h - Kernel table lookups as AVX-512 permutes -*- C++ -*-===//
//
// The decode kernels look each 4-bit code up in a 16-entry table held in
// one vector register (__gptq_lut16 in KernelsCPU.mlir): lane i of the
// result is table[idx[i]], with idx masked to its low four bits so that
// every lane's index is in range. The vector dialect lowers that to 16
// extractelement / insertelement pairs, which LLVM's X86 backend turns into
// one vpermps (vpermd for integers) but keeps the mask, though the permute
// reads only the four low bits of each index. That mask is an instruction
// per 16 weights in the inner loop of a compute-bound kernel.
//
// On targets with AVX-512F the JIT rewrites each such lookup, once the
// module is optimized, into the permute's intrinsic on the unmasked
// indices. The result is the same value in every lane: this changes the
// instructions, never the numbers.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_EXECUTION_TABLELOOKUPS_H
#define GPTQ_EXECUTION_TABLELOOKUPS_H

namespace llvm {
class Module;
} // namespace llvm

namespace mlir {
namespace gptq {

/// Rewrites every 16-lane lookup of `m` (a <16 x float> or <16 x i32> built
/// lane by lane, lane i = extractelement(table, idx[i]) with idx = v & 15,
/// the index widened or not) into `llvm.x86.avx512.permvar.{sf,si}.512` of
/// the table and v. Only for modules compiled for a CPU with AVX-512F.
/// Returns how many lookups it rewrote.
unsigned rewriteTableLookupsForAVX512(llvm::Module &m);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_EXECUTION_TABLELOOKUPS_H
