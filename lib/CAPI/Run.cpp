//===- Run.cpp - The C interface of the JIT -------------------------------===//
//
// gptq-c/Run.h over CompiledFunction: a module parsed once into a context
// of its own, whose diagnostics are collected for the error values; each
// entry compiled from a clone of it on first use and kept; calls on the
// caller's buffers, read in place.
//
//===----------------------------------------------------------------------===//

#include "gptq-c/Run.h"

#include "gptq/Execution/Describe.h"
#include "gptq/Execution/Jit.h"
#include "gptq/Execution/Npy.h"
#include "gptq/Execution/Parameters.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <new>
#include <string>

using namespace mlir;
using namespace mlir::gptq;

static_assert(
    int(DType::F32) == GPTQ_FLOAT32 && int(DType::F64) == GPTQ_FLOAT64 &&
        int(DType::I8) == GPTQ_INT8 && int(DType::U8) == GPTQ_UINT8 &&
        int(DType::I16) == GPTQ_INT16 && int(DType::I32) == GPTQ_INT32 &&
        int(DType::I64) == GPTQ_INT64 && int(DType::Bool) == GPTQ_BOOL &&
        int(DType::F16) == GPTQ_FLOAT16 && int(DType::BF16) == GPTQ_BFLOAT16,
    "GptqDType numbers DType's values");

struct GptqError {
  std::string message;
};

struct GptqArray {
  NpyArray array;
};

struct GptqModule {
  std::string path;
  JitOptions options;
  /// Diagnostics of the parser, the verifier and the lowering, as text;
  /// each error takes what was written since the call began.
  std::string diagnostics;
  llvm::raw_string_ostream diagnosticStream{diagnostics};
  ToolInput input{diagnosticStream};
  OwningOpRef<ModuleOp> module;
  bool parametersLoaded = false;
  std::string description;
  llvm::StringMap<std::unique_ptr<CompiledFunction>> entries;
};

namespace {
/// An error value: the diagnostics written during this call, then the
/// message.
GptqError *makeError(GptqModule *module, size_t diagnosticsStart,
                     const std::string &message) {
  auto *error = new (std::nothrow) GptqError();
  if (!error)
    return nullptr;
  if (module && module->diagnostics.size() > diagnosticsStart)
    error->message = module->diagnostics.substr(diagnosticsStart);
  error->message += message;
  return error;
}

GptqError *makeError(GptqModule *module, size_t diagnosticsStart,
                     llvm::Error err) {
  return makeError(module, diagnosticsStart, llvm::toString(std::move(err)));
}

/// The entry `name`, compiled on first use.
llvm::Expected<CompiledFunction *> compiled(GptqModule *module,
                                            const char *name) {
  if (!name)
    return llvm::createStringError("no entry named (a null name)");
  auto it = module->entries.find(name);
  if (it != module->entries.end())
    return it->second.get();
  // Weights kept in parameter archives beside the module, mapped once for
  // every entry.
  if (!module->parametersLoaded) {
    if (llvm::Error err = loadParameters(*module->module, module->path))
      return std::move(err);
    module->parametersLoaded = true;
  }
  // compile() lowers the module it is given: each entry gets a clone,
  // which shares the weights (attributes of the one context).
  OwningOpRef<ModuleOp> copy = module->module->clone();
  auto fn = CompiledFunction::compile(std::move(copy), name, module->options);
  if (!fn)
    return llvm::createStringError(module->path + ": " +
                                   llvm::toString(fn.takeError()));
  CompiledFunction *result = fn->get();
  module->entries[name] = std::move(*fn);
  return result;
}
} // namespace

const char *gptqErrorMessage(const GptqError *error) {
  return error ? error->message.c_str() : "out of memory";
}

void gptqErrorFree(GptqError *error) { delete error; }

GptqError *gptqModuleOpen(const char *path, const char *cacheDir,
                          GptqModule **result) {
  if (!path || !result)
    return makeError(nullptr, 0, "gptqModuleOpen: a null path or result");
  *result = nullptr;
  std::unique_ptr<GptqModule> module(new (std::nothrow) GptqModule());
  if (!module)
    return makeError(nullptr, 0, "out of memory");
  module->path = path;
  module->options.cacheDir =
      cacheDir ? std::string(cacheDir) : defaultCacheDir();
  module->options.toolName = "gptq-mlir";
  auto parsed = module->input.parse(path);
  if (!parsed)
    return makeError(module.get(), 0, parsed.takeError());
  module->module = std::move(*parsed);
  *result = module.release();
  return nullptr;
}

void gptqModuleFree(GptqModule *module) { delete module; }

GptqError *gptqModuleDescribe(GptqModule *module, const char *entry,
                              const char **json) {
  if (!module || !json)
    return makeError(nullptr, 0, "gptqModuleDescribe: a null module or result");
  size_t start = module->diagnostics.size();
  auto text = describeModule(*module->module,
                             entry ? std::optional<llvm::StringRef>(entry)
                                   : std::nullopt);
  if (!text)
    return makeError(module, start,
                     module->path + ": " + llvm::toString(text.takeError()));
  module->description = std::move(*text);
  *json = module->description.c_str();
  return nullptr;
}

GptqError *gptqModuleCompile(GptqModule *module, const char *entry,
                             double *seconds) {
  if (!module)
    return makeError(nullptr, 0, "gptqModuleCompile: a null module");
  size_t start = module->diagnostics.size();
  auto fn = compiled(module, entry);
  if (!fn)
    return makeError(module, start, fn.takeError());
  if (seconds)
    *seconds = (*fn)->compileSeconds();
  return nullptr;
}

GptqError *gptqModuleNumResults(GptqModule *module, const char *entry,
                                size_t *count) {
  if (!module || !count)
    return makeError(nullptr, 0,
                     "gptqModuleNumResults: a null module or result");
  size_t start = module->diagnostics.size();
  auto fn = compiled(module, entry);
  if (!fn)
    return makeError(module, start, fn.takeError());
  *count = (*fn)->results().size();
  return nullptr;
}

GptqError *gptqModuleCall(GptqModule *module, const char *entry,
                          const GptqBuffer *args, size_t numArgs,
                          GptqArray **results, size_t capacity,
                          size_t *numResults) {
  if (!module || (numArgs && !args) || !numResults || (capacity && !results))
    return makeError(nullptr, 0, "gptqModuleCall: a null argument");
  size_t start = module->diagnostics.size();
  auto fn = compiled(module, entry);
  if (!fn)
    return makeError(module, start, fn.takeError());
  if ((*fn)->results().size() > capacity)
    return makeError(module, start,
                     "@" + std::string(entry) + " returns " +
                         std::to_string((*fn)->results().size()) +
                         " results; room was given for " +
                         std::to_string(capacity));

  std::vector<NpyArray> arrays;
  for (size_t i = 0; i < numArgs; ++i) {
    const GptqBuffer &b = args[i];
    std::string name = "argument " + std::to_string(i);
    if (int(b.dtype) < GPTQ_FLOAT32 || int(b.dtype) > GPTQ_BFLOAT16)
      return makeError(module, start,
                       "@" + std::string(entry) + ": " + name +
                           ": unknown dtype " + std::to_string(int(b.dtype)));
    if (b.rank < 0 || (b.rank > 0 && !b.shape))
      return makeError(module, start,
                       "@" + std::string(entry) + ": " + name + ": rank " +
                           std::to_string(b.rank) + " without its sizes");
    NpyArray a;
    a.dtype = DType(b.dtype);
    a.shape.assign(b.shape, b.shape + b.rank);
    std::optional<int64_t> bytes =
        checkedByteCount(a.shape, dtypeSize(a.dtype));
    if (!bytes)
      return makeError(module, start,
                       "@" + std::string(entry) + ": " + name +
                           ": sizes that are negative or overflow");
    if (*bytes > 0 && !b.data)
      return makeError(module, start,
                       "@" + std::string(entry) + ": " + name + ": null data");
    // Read in place: the buffer stays the caller's.
    a.data = NpyBuffer::adopt(static_cast<char *>(b.data), size_t(*bytes),
                              nullptr, nullptr);
    arrays.push_back(std::move(a));
  }
  // Memref arguments are the caller's to be written (a KV cache).
  auto out = (*fn)->call(arrays, {}, /*writeMemRefsInPlace=*/true);
  if (!out)
    return makeError(module, start,
                     "@" + std::string(entry) + ": " +
                         llvm::toString(out.takeError()));
  std::vector<std::unique_ptr<GptqArray>> owned;
  for (NpyArray &a : *out) {
    std::unique_ptr<GptqArray> r(new (std::nothrow) GptqArray());
    if (!r)
      return makeError(nullptr, 0, "out of memory");
    r->array = std::move(a);
    owned.push_back(std::move(r));
  }
  for (size_t i = 0; i < owned.size(); ++i)
    results[i] = owned[i].release();
  *numResults = owned.size();
  return nullptr;
}

GptqBuffer gptqArrayBuffer(const GptqArray *array) {
  GptqBuffer b{GPTQ_FLOAT32, 0, nullptr, nullptr};
  if (!array)
    return b;
  b.dtype = GptqDType(int(array->array.dtype));
  b.rank = int32_t(array->array.shape.size());
  b.shape = array->array.shape.data();
  b.data = const_cast<char *>(array->array.data.data());
  return b;
}

size_t gptqArrayByteSize(const GptqArray *array) {
  return array ? array->array.data.size() : 0;
}

void gptqArrayFree(GptqArray *array) { delete array; }
