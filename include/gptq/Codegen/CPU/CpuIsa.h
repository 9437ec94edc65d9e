//===- CpuIsa.h - The instruction sets the CPU kernels are written for ----===//
//
// The CPU kernels of the gptq lowering library carry their target
// instructions themselves (KernelsX86.mlir): a table lookup is one AVX-512
// permute or a pair of AVX2 ones, a byte dot product is AVX-512 VNNI's
// vpdpbusd. Which of them a module gets follows from the instruction set
// named here, the host's unless a caller (a test) names another.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_CODEGEN_CPU_CPUISA_H
#define GPTQ_CODEGEN_CPU_CPUISA_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"

#include "llvm/ADT/StringRef.h"

namespace llvm {
class Module;
} // namespace llvm

#include <optional>
#include <string>

namespace mlir {
namespace gptq {

/// The instruction sets of the CPU kernels, each containing the ones before.
enum class CpuIsa {
  /// Portable vector operations only (any CPU LLVM targets).
  Generic,
  /// x86-64 with AVX2 and FMA.
  AVX2,
  /// x86-64 with AVX-512 F, BW, DQ and VL.
  AVX512,
  /// AVX512 and AVX-512 VNNI.
  AVX512VNNI,
};

/// "generic", "avx2", "avx512" or "avx512-vnni".
llvm::StringRef cpuIsaName(CpuIsa isa);

/// The instruction set of a name of cpuIsaName; nothing for any other.
std::optional<CpuIsa> parseCpuIsa(llvm::StringRef name);

/// The names, for help texts and diagnostics: "generic, avx2, ...".
std::string cpuIsaNames();

/// The richest instruction set that a target with LLVM's feature string
/// `features` ("+avx2,+fma,-avx512f,...") and triple `triple` has.
CpuIsa cpuIsaOfFeatures(llvm::StringRef features, llvm::StringRef triple);

/// The host CPU's (llvm::sys::getHostCPUFeatures).
CpuIsa hostCpuIsa();

/// Whether a CPU of `have` runs code written for `isa`.
inline bool cpuIsaRuns(CpuIsa have, CpuIsa isa) { return isa <= have; }

/// The CPU that LLVM generates code for when code is meant for `isa` and
/// no richer one (a test on a richer host): x86-64-v3 for AVX2, x86-64-v4
/// (with VNNI added for AVX512VNNI) for the AVX-512 sets; empty for
/// Generic, whose code follows the host.
llvm::StringRef cpuNameForIsa(CpuIsa isa);

/// The feature string to add to cpuNameForIsa's CPU: "+avx512vnni" for
/// AVX512VNNI, else empty.
llvm::StringRef cpuFeaturesForIsa(CpuIsa isa);

/// Marks every function of `module` to keep 512-bit vectors whole, for a
/// target with AVX-512: the CPU kernels hold register tiles of 512-bit
/// vectors, which the X86 backend would otherwise split into 256-bit halves
/// on CPUs that prefer 256-bit vectors, and the tiles would spill.
void keepWideVectors(llvm::Module &module);

/// How a pass option names the host's instruction set.
constexpr const char *kHostCpuIsa = "host";

/// The instruction set a pass option names: `kHostCpuIsa` for the host's;
/// nothing for an unknown name.
std::optional<CpuIsa> resolveCpuIsaOption(llvm::StringRef option);

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

/// The forms that the passes' options `cpu-isa` (a name of cpuIsaName, or
/// "host") and `byte-dots` ("auto": where the instruction set
/// has AVX-512 VNNI; "on"; "off") name, or an error naming the bad one.
FailureOr<CpuKernelForms> kernelFormsOfOptions(Operation *op, StringRef isa,
                                               StringRef byteDots);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_CODEGEN_CPU_CPUISA_H
