//===- Passes.h - Passes that run compiled code -----------------*- C++ -*-===//

#ifndef GPTQ_DRIVER_PASSES_H
#define GPTQ_DRIVER_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace gptq {

#define GEN_PASS_DECL
#include "gptq/Driver/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "gptq/Driver/Passes.h.inc"

} // namespace gptq
} // namespace mlir

#endif // GPTQ_DRIVER_PASSES_H
