//===- Passes.h - Codegen: passes of any target -----------------*- C++ -*-===//
//
// Passes about no op of ours that both targets' pipelines run: entry points,
// contractions in their normal form, strided copies, buffers' lifetimes.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_CODEGEN_COMMON_PASSES_H
#define GPTQ_CODEGEN_COMMON_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace gptq {

#define GEN_PASS_DECL
#include "gptq/Codegen/Common/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "gptq/Codegen/Common/Passes.h.inc"

} // namespace gptq
} // namespace mlir

#endif // GPTQ_CODEGEN_COMMON_PASSES_H
