//===- Chips.h - The NVIDIA architectures a build can target ----*- C++ -*-===//
//
// Asked of the tools that build GPU code themselves (LLVM's NVPTX backend,
// the CUDA toolkit's ptxas), not of a list of ours: a chip either knows
// nothing of goes on as a warning per kernel ("not a recognized processor")
// and then as ptxas's log with the kernel's IR.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_CODEGEN_GPU_CHIPS_H
#define GPTQ_CODEGEN_GPU_CHIPS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace mlir {
namespace gptq {

/// Fails in one line, starting with the quoted chip, when LLVM's NVPTX
/// backend does not know `chip` (the line lists the chips it knows), or,
/// when `ptxas` names an executable, when that ptxas does not take it
/// (CUDA 13's starts at sm_75; found by assembling an empty module for
/// it). `chip` is a name such as sm_90.
llvm::Error checkNVPTXChip(llvm::StringRef chip, llvm::StringRef ptxas);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_CODEGEN_GPU_CHIPS_H
