//===- ByteDotProducts.h - Kernel byte dot products as VNNI -----*- C++ -*-===//
//
// The 4-bit decode kernel for groups of 128 columns has two forms in
// KernelsCPU.mlir: table lookups (__gptq_matmul_rows_q4_lut) and integer
// dot products of codes and activations held as bytes
// (__gptq_matmul_rows_q4_dot), which take a third of the vector
// instructions where the CPU multiplies bytes in one instruction (AVX-512
// VNNI's vpdpbusd). The kernels ask which to run of a predicate,
// __gptq_byte_dots() -> i1 (false in the kernels: the table kernel), and
// the dot product kernel multiplies through one function, __gptq_dot4: in
// each 32-bit lane of its result, the accumulator plus the four products of
// the lane's unsigned bytes of one operand and signed bytes of the other.
// Its body in the kernels is portable (bytes widened to 32 bits,
// multiplied, the four of a lane added) and several times slower than the
// table kernel; LLVM's X86 backend does not recognize it as vpdpbusd. Both
// functions are marked never to be inlined, so that they reach LLVM IR as
// themselves; the JIT gives them their bodies for its CPU before it
// optimizes the module, then lets them be inlined. Both bodies of
// __gptq_dot4 give the same integers.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_EXECUTION_BYTEDOTPRODUCTS_H
#define GPTQ_EXECUTION_BYTEDOTPRODUCTS_H

#include "llvm/ADT/StringRef.h"

#include <optional>

namespace llvm {
class Module;
} // namespace llvm

namespace mlir {
namespace gptq {

/// How the 4-bit decode kernel multiplies.
enum class ByteDots {
  /// Table lookups (__gptq_byte_dots() is false).
  Off,
  /// Byte dot products, __gptq_dot4 as AVX-512 VNNI's instruction.
  VNNI,
  /// Byte dot products, __gptq_dot4 in portable operations (slow: to
  /// test the kernel on any CPU).
  Portable,
};

/// Whether code for `triple` with LLVM's `features` ("+avx512vnni,...")
/// has AVX-512 VNNI's byte dot products.
bool targetHasByteDotProducts(llvm::StringRef features,
                              llvm::StringRef triple);

/// The mode the JIT uses: VNNI where the target has it, else Off; the
/// environment's GPTQ_JIT_BYTE_DOTS ("off", "portable" or "vnni", which a
/// target without VNNI refuses) chooses otherwise. None, with `error`
/// saying why, for another value.
std::optional<ByteDots> byteDotsMode(llvm::StringRef features,
                                     llvm::StringRef triple,
                                     const char *environment,
                                     std::string &error);

/// Gives `m`'s __gptq_byte_dots and __gptq_dot4, those it defines with the
/// kernels' signatures, their bodies for `mode`, and lets them be inlined.
/// Returns how many of the two it specialized.
unsigned specializeByteDotProducts(llvm::Module &m, ByteDots mode);

/// The name of `mode` in GPTQ_JIT_BYTE_DOTS.
llvm::StringRef byteDotsName(ByteDots mode);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_EXECUTION_BYTEDOTPRODUCTS_H
