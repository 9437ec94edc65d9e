//===- Run.cpp - The C interface of the JIT -------------------------------===//
//
// gptq-c/Run.h over CompiledFunction: a module parsed once into a context
// of its own, whose diagnostics are collected for the error values; each
// entry compiled from a clone of it on first use and kept; calls on the
// caller's buffers, read in place.
//
// Handles are checked, not trusted: a GptqModule is a small handle that is
// never freed, and so never handed out again, pointing at the module's
// state; every function looks the handle up among the open ones and holds
// it for the length of the call, so that a module freed by one thread while
// another calls it is freed when that call returns, and a handle already
// freed is an error, not a crash or another module. The calls
// on one module are serialized. The files the module maps (its own text,
// its parameter archives) are owned by it (MappedInputOwner): checked
// before and after every call, and a SIGBUS from one cut short during a
// call is recovered from and reported as that call's error.
//
//===----------------------------------------------------------------------===//

#include "gptq-c/Run.h"

#include "DescribeModel.h"

#include "gptq/Execution/Describe.h"
#include "gptq/Execution/Jit.h"
#include "gptq/Execution/Parameters.h"
#include "gptq/Support/Npy.h"
#include "gptq/Support/Signals.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_set>
#include <vector>

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

namespace {
/// What an open module holds.
struct ModuleState {
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
  /// gptqModuleDescribeModel's text, made before the parameter archives
  /// are attached (its "inline" says which blobs the file holds).
  std::string modelDescription;
  llvm::StringMap<std::unique_ptr<CompiledFunction>> entries;
  /// Held by each call: one call at a time.
  std::mutex callMutex;
};
} // namespace

/// The handle: its state while open, then null for ever. Handles are never
/// freed (a few bytes each), so that no later module gets a freed one's
/// address. `calls` and `state` are guarded by handlesMutex.
struct GptqModule {
  ModuleState *state = nullptr;
  /// How many functions hold the module now (ModuleUse).
  int calls = 0;
  /// gptqModuleFree has begun: new holds are refused.
  bool freeing = false;
};

namespace {
/// Every handle gptqModuleOpen made: a pointer that is not one of them is
/// not dereferenced.
std::mutex handlesMutex;
std::condition_variable callEnded;
std::unordered_set<const GptqModule *> &handles() {
  static auto *all = new std::unordered_set<const GptqModule *>();
  return *all;
}

/// A function's hold on its module: none for a handle that is not open (or
/// is being freed); else the module stays alive, and its other calls wait,
/// until the hold ends.
class ModuleUse {
public:
  explicit ModuleUse(GptqModule *module) {
    {
      std::lock_guard<std::mutex> lock(handlesMutex);
      if (!handles().count(module) || !module->state || module->freeing)
        return;
      ++module->calls;
    }
    held = module;
    serial = std::unique_lock<std::mutex>(module->state->callMutex);
  }
  ModuleUse(const ModuleUse &) = delete;
  ModuleUse &operator=(const ModuleUse &) = delete;
  ~ModuleUse() {
    if (!held)
      return;
    serial.unlock();
    {
      std::lock_guard<std::mutex> lock(handlesMutex);
      --held->calls;
    }
    callEnded.notify_all();
  }
  explicit operator bool() const { return held != nullptr; }
  ModuleState *state() const { return held->state; }

private:
  GptqModule *held = nullptr;
  std::unique_lock<std::mutex> serial;
};

std::string notOpen(const char *function) {
  return std::string(function) +
         ": not an open module (a null handle, one already freed, or one "
         "being freed by another thread)";
}
/// An error value: the diagnostics written during this call, then the
/// message.
GptqError *makeError(ModuleState *module, size_t diagnosticsStart,
                     const std::string &message) {
  auto *error = new (std::nothrow) GptqError();
  if (!error)
    return nullptr;
  if (module && module->diagnostics.size() > diagnosticsStart)
    error->message = module->diagnostics.substr(diagnosticsStart);
  error->message += message;
  return error;
}

GptqError *makeError(ModuleState *module, size_t diagnosticsStart,
                     llvm::Error err) {
  return makeError(module, diagnosticsStart, llvm::toString(std::move(err)));
}

/// Messages name the entry: refused when it would break their one line.
llvm::Error checkEntryName(const char *name) {
  for (const char *c = name; *c; ++c)
    if (static_cast<unsigned char>(*c) < 0x20 || *c == 0x7f)
      return llvm::createStringError(
          "an entry name with a control character (byte " +
          std::to_string(int(static_cast<unsigned char>(*c))) + ")");
  return llvm::Error::success();
}

/// The entry `name`, compiled on first use.
llvm::Expected<CompiledFunction *> compiled(ModuleState *module,
                                            const char *name) {
  if (!name)
    return llvm::createStringError("no entry named (a null name)");
  if (llvm::Error err = checkEntryName(name))
    return std::move(err);
  auto it = module->entries.find(name);
  if (it != module->entries.end())
    return it->second.get();
  // Weights kept in parameter archives beside the module, mapped once for
  // every entry.
  if (!module->parametersLoaded) {
    if (module->modelDescription.empty())
      module->modelDescription = describeModel(*module->module);
    MappedInputOwner owner(module);
    ensureMappedInputHandler();
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
  if (result)
    *result = nullptr;
  if (!path || !result)
    return makeError(nullptr, 0, "gptqModuleOpen: a null path or result");
  std::unique_ptr<ModuleState> module(new (std::nothrow) ModuleState());
  std::unique_ptr<GptqModule> handle(new (std::nothrow) GptqModule());
  if (!module || !handle)
    return makeError(nullptr, 0, "out of memory");
  module->path = path;
  module->options.cacheDir =
      cacheDir ? std::string(cacheDir) : defaultCacheDir();
  module->options.toolName = "gptq-mlir";
  // Its file is mapped and read in place: owned by the module, so that a
  // file cut short later is its calls' error.
  MappedInputOwner owner(module.get());
  ensureMappedInputHandler();
  // A device or a pipe could block or never end: only files are opened.
  auto parsed = module->input.parse(path, /*regularOnly=*/true);
  if (!parsed)
    return makeError(module.get(), 0, parsed.takeError());
  module->module = std::move(*parsed);
  handle->state = module.release();
  {
    std::lock_guard<std::mutex> lock(handlesMutex);
    handles().insert(handle.get());
  }
  *result = handle.release();
  return nullptr;
}

void gptqModuleFree(GptqModule *module) {
  ModuleState *state;
  {
    std::unique_lock<std::mutex> lock(handlesMutex);
    // Not a handle, freed, or another thread frees it already.
    if (!handles().count(module) || !module->state || module->freeing)
      return;
    module->freeing = true;
    // Calls that hold it end first; new ones are refused.
    callEnded.wait(lock, [&] { return module->calls == 0; });
    state = module->state;
    module->state = nullptr;
  }
  delete state;
}

GptqError *gptqModuleDescribe(GptqModule *handle, const char *entry,
                              const char **json) {
  if (!json)
    return makeError(nullptr, 0, "gptqModuleDescribe: a null result");
  ModuleUse use(handle);
  if (!use)
    return makeError(nullptr, 0, notOpen("gptqModuleDescribe"));
  ModuleState *module = use.state();
  size_t start = module->diagnostics.size();
  if (entry)
    if (llvm::Error err = checkEntryName(entry))
      return makeError(module, start, std::move(err));
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

GptqError *gptqModuleDescribeModel(GptqModule *handle, const char **json) {
  if (!json)
    return makeError(nullptr, 0, "gptqModuleDescribeModel: a null result");
  ModuleUse use(handle);
  if (!use)
    return makeError(nullptr, 0, notOpen("gptqModuleDescribeModel"));
  ModuleState *module = use.state();
  if (module->modelDescription.empty())
    module->modelDescription = describeModel(*module->module);
  *json = module->modelDescription.c_str();
  return nullptr;
}

GptqError *gptqModuleResource(GptqModule *handle, const char *key,
                              const void **data, size_t *size) {
  if (!key || !data || !size)
    return makeError(nullptr, 0, "gptqModuleResource: a null argument");
  ModuleUse use(handle);
  if (!use)
    return makeError(nullptr, 0, notOpen("gptqModuleResource"));
  ModuleState *module = use.state();
  AsmResourceBlob *blob = findResourceBlob(module->module->getContext(), key);
  if (!blob) {
    std::string shown;
    llvm::raw_string_ostream os(shown);
    os.write_escaped(key);
    return makeError(nullptr, 0,
                     module->path + ": no data for resource '" + shown + "'");
  }
  llvm::ArrayRef<char> bytes = blob->getData();
  *data = bytes.data();
  *size = bytes.size();
  return nullptr;
}

GptqError *gptqModuleCompile(GptqModule *handle, const char *entry,
                             double *seconds) {
  ModuleUse use(handle);
  if (!use)
    return makeError(nullptr, 0, notOpen("gptqModuleCompile"));
  ModuleState *module = use.state();
  size_t start = module->diagnostics.size();
  auto fn = compiled(module, entry);
  if (!fn)
    return makeError(module, start, fn.takeError());
  if (seconds)
    *seconds = (*fn)->compileSeconds();
  return nullptr;
}

GptqError *gptqModuleNumResults(GptqModule *handle, const char *entry,
                                size_t *count) {
  if (!count)
    return makeError(nullptr, 0, "gptqModuleNumResults: a null result");
  ModuleUse use(handle);
  if (!use)
    return makeError(nullptr, 0, notOpen("gptqModuleNumResults"));
  ModuleState *module = use.state();
  size_t start = module->diagnostics.size();
  auto fn = compiled(module, entry);
  if (!fn)
    return makeError(module, start, fn.takeError());
  *count = (*fn)->results().size();
  return nullptr;
}

GptqError *gptqModuleCall(GptqModule *handle, const char *entry,
                          const GptqBuffer *args, size_t numArgs,
                          GptqArray **results, size_t capacity,
                          size_t *numResults) {
  if ((numArgs && !args) || !numResults || (capacity && !results))
    return makeError(nullptr, 0, "gptqModuleCall: a null argument");
  ModuleUse use(handle);
  if (!use)
    return makeError(nullptr, 0, notOpen("gptqModuleCall"));
  ModuleState *module = use.state();
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
  // The call's errors, after the entry's name.
  auto fail = [&](const llvm::Twine &message) {
    return makeError(module, start,
                     ("@" + llvm::Twine(entry) + ": " + message).str());
  };

  std::vector<NpyArray> arrays;
  for (size_t i = 0; i < numArgs; ++i) {
    const GptqBuffer &b = args[i];
    std::string name = "argument " + std::to_string(i);
    if (int(b.dtype) < GPTQ_FLOAT32 || int(b.dtype) > GPTQ_BFLOAT16)
      return fail(name + ": unknown dtype " + std::to_string(int(b.dtype)));
    if (b.rank < 0 || (b.rank > 0 && !b.shape))
      return fail(name + ": rank " + std::to_string(b.rank) +
                  " without its sizes");
    NpyArray a;
    a.dtype = DType(b.dtype);
    a.shape.assign(b.shape, b.shape + b.rank);
    std::optional<int64_t> bytes =
        checkedByteCount(a.shape, dtypeSize(a.dtype));
    if (!bytes)
      return fail(name + ": sizes that are negative or overflow");
    if (*bytes > 0 && !b.data)
      return fail(name + ": null data");
    // Read in place: the buffer stays the caller's.
    a.data = NpyBuffer::adopt(static_cast<char *>(b.data), size_t(*bytes),
                              nullptr, nullptr);
    arrays.push_back(std::move(a));
  }
  // The module's files are what they were when mapped, before the call
  // reads them, and were after it: a SIGBUS in one during the call (cut
  // short under it) was recovered from with zeros, whose results are
  // discarded here.
  ensureMappedInputHandler();
  if (llvm::Error err = checkMappedInputsUnchanged(module))
    return fail(llvm::toString(std::move(err)));
  // Memref arguments are the caller's to be written (a KV cache).
  auto out = (*fn)->call(arrays, {}, /*writeMemRefsInPlace=*/true);
  if (!out)
    return fail(llvm::toString(out.takeError()));
  if (llvm::Error err = checkMappedInputsUnchanged(module))
    return fail(llvm::toString(std::move(err)));
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
