//===- TableLookups.h - Kernel table lookups as x86 permutes ----*- C++ -*-===//
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
// indices. Without AVX-512 the backend has no 16-lane permute and keeps
// the 16 extracts and inserts (about 130 instructions per lookup, most of
// the decode kernel, and seconds of instruction scheduling per compile);
// on AVX2 the JIT rewrites each lookup into two 8-lane permutes (vpermps,
// vpermd) per half of the indices, one of each half of the table, with the
// index's bit 3 choosing between them. The result is the same value in
// every lane: this changes the instructions, never the numbers.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_EXECUTION_TABLELOOKUPS_H
#define GPTQ_EXECUTION_TABLELOOKUPS_H

namespace llvm {
class Module;
} // namespace llvm

namespace mlir {
namespace gptq {

/// The permutes that rewriteTableLookups writes.
enum class TableLookupTarget {
  /// `llvm.x86.avx512.permvar.{sf,si}.512` of the table and the indices.
  AVX512,
  /// `llvm.x86.avx2.{permps,permd}` of each half of the table at each half
  /// of the indices, selected by the indices' bit 3.
  AVX2,
};

/// Rewrites every 16-lane lookup of `m` (a <16 x float> or <16 x i32> built
/// lane by lane, lane i = extractelement(table, idx[i]) with idx = v & 15,
/// the index widened or not) into permutes of the table at v for `target`,
/// which the CPU the module is compiled for must have. Returns how many
/// lookups it rewrote.
unsigned rewriteTableLookups(llvm::Module &m, TableLookupTarget target);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_EXECUTION_TABLELOOKUPS_H
