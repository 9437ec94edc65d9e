//===- GPTQPlugin.cpp - The gptq dialect and passes for mlir-opt ----------===//
//
// libGPTQPlugin.so: loaded into an upstream driver built on the same MLIR
// shared library (Debian's mlir-opt-22, or any tool that calls
// MlirOptMain), it adds the gptq dialect, every gptq pass and pipeline, and
// the upstream dialects and translations those pipelines create:
//
//   mlir-opt-22 --load-dialect-plugin=libGPTQPlugin.so \
//               --load-pass-plugin=libGPTQPlugin.so model.mlir \
//       --pass-pipeline="builtin.module(gptq-quantize-model{bits=4})" \
//       -o model.q.mlir
//
// (mlir-opt parses its command line before it loads plugins: the passes are
// named in --pass-pipeline, not as flags.)
//
// Both flags name the same library: the dialect plugin makes gptq IR
// parse, the pass plugin makes the passes known to the command line. Loaded
// with --load-pass-plugin alone, the library also loads itself as the
// driver's dialect plugin (through the driver's own --load-dialect-plugin
// option), so that gptq IR parses rather than failing with "Dialect `gptq'
// not found"; a driver without that option gets a one-line note saying
// what to add.
//
// A driver with MLIR built into it (torch-mlir-opt from the torch-mlir
// wheel, a static build of another LLVM) shares nothing with the
// libMLIR.so this library links: its dialect registry, contexts and pass
// registry are another copy's. The library then registers nothing and says
// so, rather than aborting on the clash of the two copies' dialects or
// crashing in the other copy's context.
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
#include <link.h>
#include <string>

using namespace mlir;

#define GPTQ_PLUGIN_EXPORT __attribute__((visibility("default")))

namespace {
/// Whether the driver registered the dialects (--load-dialect-plugin).
bool dialectsRegistered = false;

/// The MLIR shared library this plugin links, when it came into the
/// process after the plugin (loaded for it, not for the driver): the
/// driver then runs an MLIR of its own. Empty when the driver uses it.
std::string foreignMLIR() {
  Dl_info self;
  if (!::dladdr(reinterpret_cast<void *>(&foreignMLIR), &self))
    return "";
  struct Search {
    uintptr_t selfBase;
    int index = 0, selfIndex = -1, mlirIndex = -1;
    std::string mlirPath;
  } search{reinterpret_cast<uintptr_t>(self.dli_fbase)};
  // The loader lists objects in the order it loaded them; a library loaded
  // for this plugin comes after it.
  ::dl_iterate_phdr(
      [](dl_phdr_info *info, size_t, void *data) {
        auto &search = *static_cast<Search *>(data);
        llvm::StringRef name = info->dlpi_name ? info->dlpi_name : "";
        if (info->dlpi_addr == search.selfBase)
          search.selfIndex = search.index;
        else if (search.mlirIndex < 0 && name.contains("libMLIR.so")) {
          search.mlirIndex = search.index;
          search.mlirPath = name.str();
        }
        ++search.index;
        return 0;
      },
      &search);
  if (search.selfIndex < 0 || search.mlirIndex < search.selfIndex)
    return "";
  return search.mlirPath;
}

/// True when the driver runs another MLIR; says so once.
bool refuseForeignDriver() {
  static const std::string foreign = foreignMLIR();
  static bool said = false;
  if (foreign.empty())
    return false;
  if (!said)
    llvm::errs() << "error: libGPTQPlugin.so is built on " << foreign
                 << " (LLVM " LLVM_VERSION_STRING
                    "), which this driver does not use: it has its own MLIR "
                    "built in, whose dialects and passes a plugin cannot "
                    "reach; nothing was registered. Write the module with "
                    "this driver, then run gptq-opt, or mlir-opt-"
                 << LLVM_VERSION_MAJOR << " with this plugin, on it.\n";
  said = true;
  return true;
}

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
            if (refuseForeignDriver())
              return;
            dialectsRegistered = true;
            gptq::registerGPTQDialects(*registry);
          }};
}

extern "C" GPTQ_PLUGIN_EXPORT PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "GPTQ", LLVM_VERSION_STRING, []() {
            if (refuseForeignDriver())
              return;
            gptq::registerGPTQPassesAndPipelines();
            registerDialectsToo();
          }};
}
