//===- Passes.h - Model-level quantization passes ---------------*- C++ -*-===//

#ifndef GPTQ_QUANTIZE_PASSES_H
#define GPTQ_QUANTIZE_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace gptq {

#define GEN_PASS_DECL
#include "gptq/Quantize/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "gptq/Quantize/Passes.h.inc"

} // namespace gptq
} // namespace mlir

#endif // GPTQ_QUANTIZE_PASSES_H
