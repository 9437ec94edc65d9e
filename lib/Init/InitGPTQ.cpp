//===- InitGPTQ.cpp - Register the gptq dialect, passes and pipelines -----===//

#include "gptq/InitGPTQ.h"

#include "gptq/Codegen/CPU/Passes.h"
#include "gptq/Codegen/Common/Passes.h"
#include "gptq/Codegen/GPU/Passes.h"
#include "gptq/Conversion/GPTQToUpstream/UpstreamPipeline.h"
#include "gptq/Conversion/Passes.h"
#include "gptq/Dialect/GPTQ/Transforms/Passes.h"
#include "gptq/Driver/Passes.h"
#include "gptq/Execution/Jit.h"
#include "gptq/Pipelines/Pipelines.h"
#include "gptq/Quantize/Passes.h"

void mlir::gptq::registerGPTQDialects(DialectRegistry &registry) {
  registerToolDialects(registry);
}

void mlir::gptq::registerGPTQPassesAndPipelines() {
  registerGPTQPasses();
  registerGPTQCodegenCommonPasses();
  registerGPTQCodegenCPUPasses();
  registerGPTQCodegenGPUPasses();
  registerGPTQConversionPasses();
  registerGPTQQuantizePasses();
  registerGPTQDriverPasses();
  registerPipelines();
  registerUpstreamPipeline();
}
