//===- Passes.h - Codegen: the CPU schedule ---------------------*- C++ -*-===//
//
// Passes about no op of ours that schedule linalg on the CPU: parallel loops,
// reassociable reductions, vectorizable math, OpenMP worksharing.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_CODEGEN_CPU_PASSES_H
#define GPTQ_CODEGEN_CPU_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace gptq {

#define GEN_PASS_DECL
#include "gptq/Codegen/CPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "gptq/Codegen/CPU/Passes.h.inc"

} // namespace gptq
} // namespace mlir

#endif // GPTQ_CODEGEN_CPU_PASSES_H
