//===- GPTQPlugin.cpp - The gptq dialect and passes for mlir-opt ----------===//
//
// libGPTQPlugin.so: loaded into an upstream driver built on the same MLIR
// shared library (Debian's mlir-opt-22, or any tool that calls
// MlirOptMain), it adds the gptq dialect, every gptq pass and pipeline, and
// the upstream dialects and translations those pipelines create:
//
//   mlir-opt-22 --load-dialect-plugin=libGPTQPlugin.so \
//               --load-pass-plugin=libGPTQPlugin.so \
//               model.mlir --gptq-quantize-model="bits=4" -o model.q.mlir
//
// Both flags name the same library: the dialect plugin makes gptq IR
// parse, the pass plugin makes the passes known to the command line.
//
//===----------------------------------------------------------------------===//

#include "gptq/InitGPTQ.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"

using namespace mlir;

#define GPTQ_PLUGIN_EXPORT __attribute__((visibility("default")))

extern "C" GPTQ_PLUGIN_EXPORT DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "GPTQ", LLVM_VERSION_STRING,
          [](DialectRegistry *registry) {
            gptq::registerGPTQDialects(*registry);
          }};
}

extern "C" GPTQ_PLUGIN_EXPORT PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "GPTQ", LLVM_VERSION_STRING, []() {
            gptq::registerGPTQPassesAndPipelines();
          }};
}
