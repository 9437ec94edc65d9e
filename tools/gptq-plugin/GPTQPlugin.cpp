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
// parse, the pass plugin makes the passes known to the command line. Loaded
// with --load-pass-plugin alone, the library also loads itself as the
// driver's dialect plugin (through the driver's own --load-dialect-plugin
// option), so that gptq IR parses rather than failing with "Dialect `gptq'
// not found"; a driver without that option gets a one-line note saying
// what to add.
//
//===----------------------------------------------------------------------===//

#include "gptq/InitGPTQ.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <dlfcn.h>
#include <fstream>
#include <iterator>
#include <string>

using namespace mlir;

#define GPTQ_PLUGIN_EXPORT __attribute__((visibility("default")))

namespace {
/// Whether the driver registered the dialects (--load-dialect-plugin).
bool dialectsRegistered = false;

/// Whether the process's command line has a --load-dialect-plugin flag,
/// which may come after the pass plugin's and is then not yet handled.
bool commandLineLoadsDialectPlugins() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)),
                  std::istreambuf_iterator<char>());
  return all.find("load-dialect-plugin") != std::string::npos;
}

/// Loaded as a pass plugin only: loads this library as the dialect plugin
/// too, through the driver's option, or says how to.
void registerDialectsToo() {
  if (dialectsRegistered || commandLineLoadsDialectPlugins())
    return;
  Dl_info self;
  auto &options = llvm::cl::getRegisteredOptions();
  auto it = options.find("load-dialect-plugin");
  if (it != options.end() &&
      ::dladdr(reinterpret_cast<void *>(&registerDialectsToo), &self) &&
      self.dli_fname &&
      !it->second->addOccurrence(0, "load-dialect-plugin", self.dli_fname) &&
      dialectsRegistered)
    return;
  llvm::errs() << "note: libGPTQPlugin.so is loaded as a pass plugin only; "
                  "for IR with gptq ops, give it to --load-dialect-plugin "
                  "too\n";
}
} // namespace

extern "C" GPTQ_PLUGIN_EXPORT DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "GPTQ", LLVM_VERSION_STRING,
          [](DialectRegistry *registry) {
            dialectsRegistered = true;
            gptq::registerGPTQDialects(*registry);
          }};
}

extern "C" GPTQ_PLUGIN_EXPORT PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "GPTQ", LLVM_VERSION_STRING, []() {
            gptq::registerGPTQPassesAndPipelines();
            registerDialectsToo();
          }};
}
