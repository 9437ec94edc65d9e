//===- UpstreamPipeline.h - A module other compilers take -------*- C++ -*-===//
//
// gptq-to-upstream-pipeline: a model, float or quantized by
// gptq-quantize-model, as upstream MLIR alone (no op, type or attribute of
// the gptq dialect), for compilers without it (IREE; docs/pipelines.md).
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_CONVERSION_GPTQTOUPSTREAM_UPSTREAMPIPELINE_H
#define GPTQ_CONVERSION_GPTQTOUPSTREAM_UPSTREAMPIPELINE_H

namespace mlir {
class OpPassManager;
namespace gptq {

/// gptq-to-quant-types, lower-quant-ops on every function,
/// gptq-permute-to-gather, canonicalize, gptq-destinations-to-results,
/// gptq-strip-to-upstream.
void buildUpstreamPipeline(OpPassManager &pm);

/// Registers gptq-to-upstream-pipeline.
void registerUpstreamPipeline();

} // namespace gptq
} // namespace mlir

#endif // GPTQ_CONVERSION_GPTQTOUPSTREAM_UPSTREAMPIPELINE_H
