//===- Parameters.cpp - Weights kept in an archive beside a module --------===//

#include "gptq/Execution/Parameters.h"

#include "gptq/Execution/Jit.h"
#include "gptq/Execution/Npz.h"
#include "gptq/Execution/Output.h"
#include "gptq/Execution/Signals.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"

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
};
} // namespace

llvm::Error mlir::gptq::loadParameters(ModuleOp module,
                                       llvm::StringRef moduleFile) {
  Attribute attr = module->getAttr(kParametersAttrName);
  if (!attr)
    return llvm::Error::success();
  bool fromStdin = moduleFile.empty() || moduleFile == "-";
  std::string moduleLabel = fromStdin ? "<stdin>" : moduleFile.str();
  auto fileName = dyn_cast<StringAttr>(attr);
  if (!fileName || fileName.getValue().empty())
    return error(moduleLabel + ": the " + kParametersAttrName +
                 " attribute must be a string naming the parameter archive, "
                 "found " +
                 llvm::formatv("{0}", attr));
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

  // Every use of every dense_resource, by name, in the order they appear.
  llvm::MapVector<StringRef, SmallVector<Use, 1>> uses;
  module->walk([&](Operation *op) {
    for (NamedAttribute named : op->getAttrs())
      named.getValue().walk([&](DenseResourceElementsAttr resource) {
        uses[resource.getRawHandle().getKey()].push_back(
            {resource, op->getLoc()});
      });
  });

  // The archive is an input of the run: no output of it may replace it.
  if (RunFiles *files = RunFiles::current())
    if (llvm::Error err = files->addInput(
            path, "the parameter archive of " + moduleLabel))
      return err;

  // A device or a pipe may never end: only files are read.
  llvm::sys::fs::file_status status;
  if (!llvm::sys::fs::status(path, status) &&
      status.type() != llvm::sys::fs::file_type::regular_file)
    return error(path + ": cannot read the parameter archive: not a regular "
                        "file");
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return error(path + ": cannot read the parameter archive: " +
                 buffer.getError().message() + " (named by the " +
                 kParametersAttrName + " attribute of " + moduleLabel + ")");
  // Shared by the blobs, which keep the file mapped; guarded, so that an
  // archive that shrinks or changes under the run is an error naming it.
  struct Archive {
    std::unique_ptr<llvm::MemoryBuffer> buffer;
    MappedInput guard;
    Archive(std::unique_ptr<llvm::MemoryBuffer> b, llvm::StringRef path)
        : buffer(std::move(b)),
          guard(buffer->getBufferStart(), buffer->getBufferSize(), path) {}
  };
  auto archive = std::make_shared<Archive>(std::move(*buffer), path);
  auto arrays = parseNpzInPlace(archive->buffer->getBuffer(), path);
  if (!arrays)
    return arrays.takeError();
  llvm::StringMap<const NpyView *> byName;
  for (const NpzView &entry : *arrays)
    byName[entry.name] = &entry.array;

  for (auto &[key, keyUses] : uses) {
    auto found = byName.find(key);
    if (found == byName.end())
      return error(path + ": no array '" + key + "', which " + moduleLabel +
                   " uses at " + describeLocation(keyUses.front().loc));
    const NpyView &array = *found->second;
    for (const Use &use : keyUses) {
      ShapedType type = use.attr.getType();
      std::optional<DType> dtype = dtypeOfElementType(type.getElementType());
      std::string at = describeLocation(use.loc);
      if (!dtype || type.getElementType().isIndex())
        return error(path + ": array '" + key + "': its use at " + at +
                     " has the type " + typeString(type) +
                     ", whose elements no .npy dtype holds");
      NpyView expected;
      expected.dtype = *dtype;
      expected.shape.assign(type.getShape().begin(), type.getShape().end());
      bool dtypeOk = array.dtype == *dtype ||
                     (*dtype == DType::I8 && array.dtype == DType::U8);
      if (!dtypeOk || array.shape != expected.shape)
        return error(path + ": array '" + key + "': expected " +
                     expected.describe() + " (its use at " + at + "), found " +
                     array.describe());
    }
    DenseResourceElementsHandle handle = keyUses.front().attr.getRawHandle();
    if (handle.getBlob())
      return error(path + ": array '" + key + "': " + moduleLabel +
                   " holds the dense_resource '" + key +
                   "' itself as well (in its dialect_resources); keep it in "
                   "one place");
    // In place when the data is aligned for its elements (the importer
    // aligns it to 64 bytes); else a copy.
    const char *data = array.data.data();
    size_t size = array.data.size();
    size_t alignment = 1;
    while (alignment < 64 &&
           reinterpret_cast<uintptr_t>(data) % (2 * alignment) == 0)
      alignment *= 2;
    if (alignment >= dtypeSize(array.dtype))
      handle.getResource()->setBlob(AsmResourceBlob(
          ArrayRef<char>(data, size), alignment,
          [archive](void *, size_t, size_t) {}, /*dataIsMutable=*/false));
    else
      handle.getResource()->setBlob(
          HeapAsmResourceBlob::allocateAndCopyWithAlign(
              ArrayRef<char>(data, size), 64));
  }
  module->removeAttr(kParametersAttrName);
  return llvm::Error::success();
}

namespace {
struct LoadParametersPass
    : public PassWrapper<LoadParametersPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LoadParametersPass)

  LoadParametersPass(std::string moduleFile, std::string toolName,
                     OpPassManager then)
      : moduleFile(std::move(moduleFile)), toolName(std::move(toolName)),
        then(std::move(then)) {}
  StringRef getArgument() const override { return "gptq-load-parameters"; }
  StringRef getDescription() const override {
    return "Attach the weights of the archive named by gptq.parameters, then "
           "run a pipeline";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    then.getDependentDialects(registry);
  }
  void runOnOperation() override {
    if (auto module = dyn_cast<ModuleOp>(getOperation())) {
      if (llvm::Error err = loadParameters(module, moduleFile)) {
        llvm::WithColor::error(llvm::errs(), toolName)
            << llvm::toString(std::move(err)) << "\n";
        return signalPassFailure();
      }
    }
    if (failed(runPipeline(then, getOperation())))
      signalPassFailure();
  }

  std::string moduleFile, toolName;
  OpPassManager then;
};
} // namespace

std::unique_ptr<Pass>
mlir::gptq::createLoadParametersPass(std::string moduleFile,
                                     std::string toolName, OpPassManager then) {
  return std::make_unique<LoadParametersPass>(
      std::move(moduleFile), std::move(toolName), std::move(then));
}
