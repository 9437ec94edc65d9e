//===- InitGPTQ.h - Register the gptq dialect, passes and pipelines -*- C++ -*-===//
//
// What a driver registers to run gptq IR and passes: gptq-opt, the mlir-opt
// plugin and pipelines built in C++ call these.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_INITGPTQ_H
#define GPTQ_INITGPTQ_H

namespace mlir {
class DialectRegistry;
namespace gptq {

/// The dialects a pipeline of gptq passes needs: the gptq dialect, the
/// upstream dialects and extensions that the passes and lowerings create,
/// and the translations to LLVM IR (the NVVM pipeline serializes kernels).
void registerGPTQDialects(DialectRegistry &registry);

/// Registers every gptq pass and pipeline with the global registry, so
/// that they parse from textual pipelines (`--pass-pipeline`,
/// parsePassPipeline) and show in a driver's --help.
void registerGPTQPassesAndPipelines();

} // namespace gptq
} // namespace mlir

#endif // GPTQ_INITGPTQ_H
