//===- Passes.h - GPTQ conversion passes ------------------------*- C++ -*-===//

#ifndef GPTQ_CONVERSION_PASSES_H
#define GPTQ_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace gptq {

#define GEN_PASS_DECL
#include "gptq/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "gptq/Conversion/Passes.h.inc"

} // namespace gptq
} // namespace mlir

#endif // GPTQ_CONVERSION_PASSES_H
