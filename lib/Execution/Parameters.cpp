//===- Parameters.cpp - Weights kept in an archive beside a module --------===//

#include "gptq/Execution/Parameters.h"

#include "gptq/Execution/Jit.h"
#include "gptq/Support/MappedPages.h"
#include "gptq/Support/Npz.h"
#include "gptq/Support/Output.h"
#include "gptq/Support/Safetensors.h"
#include "gptq/Support/Signals.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/WithColor.h"

#include <map>
#include <mutex>
#include <sys/mman.h>

using namespace mlir;
using namespace mlir::gptq;

namespace {
llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// "file:line:col" of a location, or how MLIR prints it.
std::string describeLocation(Location loc) {
  if (auto file = loc->findInstanceOf<FileLineColLoc>())
    return llvm::formatv("{0}:{1}:{2}", file.getFilename().getValue(),
                         file.getLine(), file.getColumn())
        .str();
  std::string s;
  llvm::raw_string_ostream os(s);
  loc.print(os);
  return s;
}

std::string typeString(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  type.print(os);
  return s;
}

/// A constant that uses a dense_resource.
struct Use {
  DenseResourceElementsAttr attr;
  Location loc;
  /// Whether the op is a constant whose every user reads single elements
  /// (tensor.extract: an embedding table's rows, gathered a token at a
  /// time) rather than the whole tensor.
  bool byElements;
};

/// Whether `op` is a constant that only tensor.extract ops read (users
/// whose results nothing uses, such as a widening the quantization left
/// behind, read nothing).
bool readByElements(Operation *op) {
  if (op->getNumResults() != 1 || op->getNumRegions() != 0 ||
      op->getResult(0).use_empty())
    return false;
  bool extracted = false;
  for (Operation *user : op->getResult(0).getUsers()) {
    if (user->getName().getStringRef() == "tensor.extract")
      extracted = true;
    else if (!isOpTriviallyDead(user))
      return false;
  }
  return extracted;
}
} // namespace

namespace {
/// A mapped file whose bytes blobs read in place; shared by the blobs, which
/// keep it mapped, and guarded, so that a file that shrinks or changes under
/// the run is an error naming it.
/// The blobs loadParameters attached, by the address of their data: the
/// archive each came from, and its key, so that storeParameters can refer to
/// an unchanged weight instead of writing it again.
struct Attached {
  std::string archive, key;
};
std::mutex attachedMutex;
std::map<const char *, Attached> &attached() {
  static std::map<const char *, Attached> blobs;
  return blobs;
}

struct MappedFile {
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  MappedInput guard;
  MappedFile(std::unique_ptr<llvm::MemoryBuffer> b, llvm::StringRef path)
      : buffer(std::move(b)),
        guard(buffer->getBufferStart(), buffer->getBufferSize(), path) {
    if (buffer->getBufferKind() == llvm::MemoryBuffer::MemoryBuffer_MMap) {
      registerParameterMapping(buffer->getBuffer());
      adviseHugePages(buffer->getBuffer());
    }
  }
  ~MappedFile() { unregisterParameterMapping(buffer->getBufferStart()); }
};

/// One array of an archive: where it is and what it holds.
struct Array {
  /// Its element type; none for a safetensors dtype the tools do not read.
  std::optional<DType> dtype;
  /// The dtype as the file names it, for messages.
  std::string dtypeName;
  std::vector<int64_t> shape;
  llvm::StringRef data;
  std::shared_ptr<MappedFile> file;
  /// The file's path, and what the file calls it: "array" or "tensor".
  std::string path;
  const char *noun;
  /// The archive gptq.parameters names that holds it (an index for a
  /// shard's tensor).
  std::string archive;

  std::string describe() const {
    std::string s = dtypeName + " [";
    for (auto [i, d] : llvm::enumerate(shape))
      s += (i ? ", " : "") + std::to_string(d);
    return s + "]";
  }
};

/// The element type a weight of `type` is stored as in an archive.
std::optional<DType> storedDType(Type type) {
  if (type.isIndex())
    return std::nullopt;
  return dtypeOfElementType(type);
}

/// Maps the regular file `path`, an input of the run described as `what`.
llvm::Expected<std::shared_ptr<MappedFile>> mapFile(llvm::StringRef path,
                                                    const llvm::Twine &what,
                                                    llvm::StringRef moduleLabel,
                                                    RunFiles *files) {
  if (files)
    if (llvm::Error err = files->addInput(
            path, (what + " of " + moduleLabel).str()))
      return std::move(err);
  // A device or a pipe may never end: only files are read.
  llvm::sys::fs::file_status status;
  if (!llvm::sys::fs::status(path, status) &&
      status.type() != llvm::sys::fs::file_type::regular_file)
    return error(path + ": cannot read " + what + ": not a regular file");
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return error(path + ": cannot read " + what + ": " +
                 buffer.getError().message() + " (named by the " +
                 kParametersAttrName + " attribute of " + moduleLabel + ")");
  return std::make_shared<MappedFile>(std::move(*buffer), path);
}

/// The arrays of one archive named by gptq.parameters, added to `arrays`:
/// an .npz archive, a .safetensors file, or an index of safetensors shards.
llvm::Error addArchive(llvm::StringRef path, llvm::StringRef moduleLabel,
                       RunFiles *files, llvm::StringMap<Array> &arrays) {
  std::string what = "the parameter archive";
  auto add = [&](Array array, llvm::StringRef name) -> llvm::Error {
    auto [it, inserted] = arrays.try_emplace(name, array);
    if (!inserted)
      return error(array.path + ": " + array.noun + " '" + name +
                   "' is also in " + it->second.path +
                   "; each parameter must be in one archive");
    return llvm::Error::success();
  };
  auto addSafetensors = [&](llvm::StringRef file, const llvm::Twine &what,
                            const llvm::StringMap<std::string> *index,
                            llvm::StringRef indexPath) -> llvm::Error {
    auto mapped = mapFile(file, what, moduleLabel, files);
    if (!mapped)
      return mapped.takeError();
    auto tensors = parseSafetensors((*mapped)->buffer->getBuffer(), file);
    if (!tensors)
      return tensors.takeError();
    for (SafetensorsTensor &t : *tensors) {
      // A shard's tensors that the index does not list are not its own;
      // one that the index puts in another shard is in two: which one a
      // reader takes would depend on the reader.
      if (index) {
        auto it = index->find(t.name);
        if (it == index->end())
          continue;
        if (it->second != llvm::sys::path::filename(file))
          return error(file + ": tensor '" + t.name + "' is also in " +
                       it->second + ", where the index " + indexPath +
                       " puts it; each tensor must be in one shard");
      }
      Array a{t.element, t.dtype, t.shape, t.data, *mapped, file.str(),
              "tensor", path.str()};
      if (llvm::Error err = add(std::move(a), t.name))
        return err;
    }
    if (index)
      for (const auto &entry : *index)
        if (entry.second == llvm::sys::path::filename(file) &&
            !arrays.count(entry.first()))
          return error(file + ": no tensor '" + entry.first() +
                       "', which the index " + indexPath + " puts there");
    return llvm::Error::success();
  };

  if (path.ends_with(".npz")) {
    auto mapped = mapFile(path, what, moduleLabel, files);
    if (!mapped)
      return mapped.takeError();
    auto entries = parseNpzInPlace((*mapped)->buffer->getBuffer(), path);
    if (!entries)
      return entries.takeError();
    for (NpzView &entry : *entries) {
      Array a{entry.array.dtype, dtypeName(entry.array.dtype).str(),
              entry.array.shape, entry.array.data, *mapped, path.str(),
              "array", path.str()};
      if (llvm::Error err = add(std::move(a), entry.name))
        return err;
    }
    return llvm::Error::success();
  }
  if (path.ends_with(".safetensors"))
    return addSafetensors(path, what, nullptr, "");
  if (path.ends_with(".json")) {
    auto mapped = mapFile(path, what, moduleLabel, files);
    if (!mapped)
      return mapped.takeError();
    auto index = parseSafetensorsIndex((*mapped)->buffer->getBuffer(), path);
    if (!index)
      return index.takeError();
    // Each shard once, in a stable order.
    std::vector<std::string> shards;
    for (const auto &entry : *index)
      shards.push_back(entry.second);
    llvm::sort(shards);
    shards.erase(std::unique(shards.begin(), shards.end()), shards.end());
    for (const std::string &shard : shards) {
      llvm::SmallString<256> shardPath = llvm::sys::path::parent_path(path);
      llvm::sys::path::append(shardPath, shard);
      if (llvm::Error err = addSafetensors(
              shardPath, "a shard of the parameter archive " + path, &*index,
              path))
        return err;
    }
    return llvm::Error::success();
  }
  return error(path + ": cannot read the parameter archive of " +
               moduleLabel +
               ": expected an .npz archive, a .safetensors file or a "
               "safetensors index (.json)");
}
} // namespace

AsmResourceBlob mlir::gptq::archiveBlob(llvm::ArrayRef<char> data,
                                        size_t elementSize,
                                        std::shared_ptr<const void> keep,
                                        bool *inPlace) {
  size_t alignment = 1;
  while (alignment < 64 &&
         reinterpret_cast<uintptr_t>(data.data()) % (2 * alignment) == 0)
    alignment *= 2;
  bool aligned = alignment >= elementSize;
  if (inPlace)
    *inPlace = aligned;
  if (!aligned)
    return HeapAsmResourceBlob::allocateAndCopyWithAlign(data, 64);
  return AsmResourceBlob(
      data, alignment, [keep](void *, size_t, size_t) {},
      /*dataIsMutable=*/false);
}

llvm::Error mlir::gptq::loadParameters(ModuleOp module,
                                       llvm::StringRef moduleFile,
                                       RunFiles *files) {
  Attribute attr = module->getAttr(kParametersAttrName);
  if (!attr)
    return llvm::Error::success();
  bool fromStdin = moduleFile.empty() || moduleFile == "-";
  std::string moduleLabel = fromStdin ? "<stdin>" : moduleFile.str();
  SmallVector<StringAttr> fileNames;
  if (auto name = dyn_cast<StringAttr>(attr))
    fileNames.push_back(name);
  else if (auto names = dyn_cast<ArrayAttr>(attr))
    for (Attribute a : names)
      fileNames.push_back(dyn_cast<StringAttr>(a));
  if (fileNames.empty() || llvm::any_of(fileNames, [](StringAttr name) {
        return !name || name.getValue().empty();
      }))
    return error(moduleLabel + ": the " + kParametersAttrName +
                 " attribute must be a string naming the parameter archive, "
                 "or an array of such strings, found " +
                 llvm::formatv("{0}", attr));

  llvm::StringMap<Array> arrays;
  std::string lastPath;
  for (StringAttr fileName : fileNames) {
    // A name with a control character (a NUL, a line break) is no file name
    // anyone meant, and would break the one-line messages that print it.
    if (llvm::any_of(fileName.getValue(), [](unsigned char c) {
          return c < 0x20 || c == 0x7f;
        })) {
      std::string escaped;
      llvm::raw_string_ostream os(escaped);
      os.write_escaped(fileName.getValue());
      return error(moduleLabel + ": the " + kParametersAttrName +
                   " attribute \"" + escaped +
                   "\" holds a control character; name the parameter archive "
                   "with a plain file name");
    }
    llvm::SmallString<256> path;
    if (!fromStdin && !llvm::sys::path::is_absolute(fileName.getValue()))
      path = llvm::sys::path::parent_path(moduleFile);
    llvm::sys::path::append(path, fileName.getValue());
    lastPath = path.str().str();
    if (llvm::Error err = addArchive(path, moduleLabel, files, arrays))
      return err;
  }

  // Every use of every dense_resource, by name, in the order they appear.
  llvm::MapVector<StringRef, SmallVector<Use, 1>> uses;
  module->walk([&](Operation *op) {
    for (NamedAttribute named : op->getAttrs())
      named.getValue().walk([&](DenseResourceElementsAttr resource) {
        uses[resource.getRawHandle().getKey()].push_back(
            {resource, op->getLoc(), readByElements(op)});
      });
  });

  std::string archives;
  for (auto [i, name] : llvm::enumerate(fileNames))
    archives += (i ? ", " : "") + name.getValue().str();
  for (auto &[key, keyUses] : uses) {
    auto found = arrays.find(key);
    if (found == arrays.end()) {
      // One file: named as the message's subject; else the archives listed.
      bool oneFile =
          fileNames.size() == 1 && !StringRef(lastPath).ends_with(".json");
      std::string head =
          oneFile ? lastPath + ": no " +
                        (StringRef(lastPath).ends_with(".npz") ? "array" : "tensor") +
                        " '" + key.str() + "'"
                  : moduleLabel + ": no parameter '" + key.str() + "' in " +
                        archives;
      return error(head + ", which " + moduleLabel + " uses at " +
                   describeLocation(keyUses.front().loc));
    }
    const Array &array = found->second;
    std::string label = array.path + ": " + array.noun + " '" + key.str() + "'";
    if (!array.dtype)
      return error(label + " has dtype " + array.dtypeName +
                   ", which the tools do not read (its use at " +
                   describeLocation(keyUses.front().loc) + ")");
    for (const Use &use : keyUses) {
      ShapedType type = use.attr.getType();
      std::optional<DType> dtype = storedDType(type.getElementType());
      std::string at = describeLocation(use.loc);
      if (!dtype)
        return error(label + ": its use at " + at + " has the type " +
                     typeString(type) + ", whose elements no archive holds");
      bool dtypeOk = *array.dtype == *dtype ||
                     (*dtype == DType::I8 && *array.dtype == DType::U8);
      std::vector<int64_t> shape(type.getShape().begin(),
                                 type.getShape().end());
      if (!dtypeOk || array.shape != shape) {
        Array expected = array;
        expected.dtypeName = StringRef(array.noun) == "tensor"
                                 ? safetensorsDTypeName(*dtype).str()
                                 : dtypeName(*dtype).str();
        expected.shape = shape;
        return error(label + ": expected " + expected.describe() +
                     " (its use at " + at + "), found " + array.describe());
      }
    }
    DenseResourceElementsHandle handle = keyUses.front().attr.getRawHandle();
    if (handle.getBlob())
      return error(label + ": " + moduleLabel +
                   " holds the dense_resource '" + key +
                   "' itself as well (in its dialect_resources); keep it in "
                   "one place");
    bool inPlace;
    handle.getResource()->setBlob(
        archiveBlob(ArrayRef<char>(array.data.data(), array.data.size()),
                    dtypeSize(*array.dtype), array.file, &inPlace));
    // A table read a row at a time keeps 4 KiB pages: in 2 MiB ones, each
    // row a token reads would bring 2 MiB into memory (a 1B model's
    // embedding added 350 MiB to a 128-token generation).
    if (inPlace &&
        llvm::all_of(keyUses, [](const Use &u) { return u.byElements; }))
      adviseSmallPages(array.data);
    {
      std::lock_guard<std::mutex> lock(attachedMutex);
      attached()[handle.getBlob()->getData().data()] = {array.archive,
                                                        key.str()};
    }
  }
  module->removeAttr(kParametersAttrName);
  return llvm::Error::success();
}

std::string mlir::gptq::parameterArchiveFor(llvm::StringRef outputFile) {
  llvm::StringRef stem = outputFile;
  stem.consume_back(".mlir");
  return (stem + ".safetensors").str();
}

llvm::Expected<bool> mlir::gptq::storeParameters(ModuleOp module,
                                                 llvm::StringRef outputFile,
                                                 RunFiles &files) {
  // The blobs the module refers to, in order, each once.
  llvm::MapVector<StringRef, DenseResourceElementsAttr> resources;
  module->walk([&](Operation *op) {
    for (NamedAttribute named : op->getAttrs())
      named.getValue().walk([&](DenseResourceElementsAttr resource) {
        if (resource.getRawHandle().getBlob())
          resources.insert({resource.getRawHandle().getKey(), resource});
      });
  });
  std::vector<std::string> archives;
  std::vector<SafetensorsEntry> tensors;
  for (auto &[key, attr] : resources) {
    ArrayRef<char> data = attr.getRawHandle().getBlob()->getData();
    {
      std::lock_guard<std::mutex> lock(attachedMutex);
      auto it = attached().find(data.data());
      if (it != attached().end() && it->second.key == key) {
        if (!llvm::is_contained(archives, it->second.archive))
          archives.push_back(it->second.archive);
        continue;
      }
    }
    ShapedType type = attr.getType();
    std::optional<DType> dtype = dtypeOfElementType(type.getElementType());
    std::optional<int64_t> bytes =
        dtype ? checkedByteCount(type.getShape(), dtypeSize(*dtype))
              : std::nullopt;
    // i1 blobs are bit-packed; other types have no safetensors dtype: such
    // a module is written whole, as before.
    if (!dtype || *dtype == DType::Bool || type.getElementType().isIndex() ||
        !bytes || *bytes != int64_t(data.size()))
      return false;
    tensors.push_back({key.str(), *dtype,
                       std::vector<int64_t>(type.getShape().begin(),
                                            type.getShape().end()),
                       data});
  }
  SmallVector<Attribute> names;
  Builder b(module.getContext());
  // The archives named, in a stable order, then the new one. They are
  // named by absolute paths: the output may be written where it is not to
  // stay (a staging folder the caller renames it from), and the archives
  // it reads stay where they are; the new archive, by its file name, moves
  // with the module.
  std::vector<std::string> absolute;
  for (const std::string &archive : archives) {
    llvm::SmallString<256> path(archive);
    llvm::sys::fs::make_absolute(path);
    llvm::sys::path::remove_dots(path, /*remove_dot_dot=*/true);
    absolute.push_back(path.str().str());
  }
  llvm::sort(absolute);
  for (const std::string &name : absolute)
    names.push_back(b.getStringAttr(name));
  if (!tensors.empty()) {
    std::string path = parameterArchiveFor(outputFile);
    if (llvm::Error err =
            files.outputs().add(path, [tensors](llvm::raw_ostream &os) {
              // Mapped data (the quantized weights a pass kept on disk)
              // stops counting once written.
              return writeSafetensors(os, tensors,
                                      [](const SafetensorsEntry &t) {
                                        releaseParameterPages(t.data);
                                      });
            }))
      return std::move(err);
    names.push_back(b.getStringAttr(llvm::sys::path::filename(path)));
  }
  if (names.empty())
    module->removeAttr(kParametersAttrName);
  else
    module->setAttr(kParametersAttrName, names.size() == 1
                                             ? names.front()
                                             : b.getArrayAttr(names));
  return true;
}

namespace {
struct LoadParametersPass
    : public PassWrapper<LoadParametersPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LoadParametersPass)

  LoadParametersPass(std::string moduleFile, std::string toolName,
                     OpPassManager then, RunFiles &files, std::string storeTo)
      : moduleFile(std::move(moduleFile)), toolName(std::move(toolName)),
        then(std::move(then)), files(files), storeTo(std::move(storeTo)) {}
  StringRef getArgument() const override {
    return "gptq-run-with-parameters";
  }
  StringRef getDescription() const override {
    return "Attach the weights of the archive named by gptq.parameters, then "
           "run a pipeline";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    then.getDependentDialects(registry);
  }
  void runOnOperation() override {
    auto module = dyn_cast<ModuleOp>(getOperation());
    bool fromArchives = module && module->hasAttr(kParametersAttrName);
    if (module) {
      if (llvm::Error err = loadParameters(module, moduleFile, &files)) {
        llvm::WithColor::error(llvm::errs(), toolName)
            << llvm::toString(std::move(err)) << "\n";
        return signalPassFailure();
      }
    }
    if (failed(runPipeline(then, getOperation())))
      return signalPassFailure();
    // A pipeline that ends in upstream MLIR alone (gptq-strip-to-upstream)
    // names no archive: the output holds its weights.
    if (!fromArchives || storeTo.empty() || endsUpstream())
      return;
    llvm::Expected<bool> stored = storeParameters(module, storeTo, files);
    if (!stored) {
      llvm::WithColor::error(llvm::errs(), toolName)
          << llvm::toString(stored.takeError()) << "\n";
      return signalPassFailure();
    }
    // Every blob is in an archive now: the module is printed without them.
    if (*stored) {
      auto &options = llvm::cl::getRegisteredOptions();
      auto it = options.find("mlir-elide-resource-strings-if-larger");
      if (it != options.end())
        (void)it->second->addOccurrence(
            0, "mlir-elide-resource-strings-if-larger", "0");
    }
  }

  bool endsUpstream() {
    std::string text;
    llvm::raw_string_ostream os(text);
    then.printAsTextualPipeline(os);
    return llvm::StringRef(text).contains("gptq-strip-to-upstream");
  }

  std::string moduleFile, toolName;
  OpPassManager then;
  RunFiles &files;
  std::string storeTo;
};
} // namespace

std::unique_ptr<Pass>
mlir::gptq::createLoadParametersPass(std::string moduleFile,
                                     std::string toolName, OpPassManager then,
                                     RunFiles &files, std::string storeTo) {
  return std::make_unique<LoadParametersPass>(
      std::move(moduleFile), std::move(toolName), std::move(then), files,
      std::move(storeTo));
}
