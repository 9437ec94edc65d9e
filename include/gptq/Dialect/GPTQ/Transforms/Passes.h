//===- Passes.h - GPTQ transformation passes --------------------*- C++ -*-===//

#ifndef GPTQ_DIALECT_GPTQ_TRANSFORMS_PASSES_H
#define GPTQ_DIALECT_GPTQ_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
namespace gptq {

#define GEN_PASS_DECL
#include "gptq/Dialect/GPTQ/Transforms/Passes.h.inc"

/// Adds the pattern that expands gptq.quantize_layer into finer gptq ops.
void populateDecomposeQuantizeLayerPatterns(RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "gptq/Dialect/GPTQ/Transforms/Passes.h.inc"

} // namespace gptq
} // namespace mlir

#endif // GPTQ_DIALECT_GPTQ_TRANSFORMS_PASSES_H
