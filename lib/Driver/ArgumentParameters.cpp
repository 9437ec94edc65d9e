//===- ArgumentParameters.cpp - Weights passed as arguments ---------------===//

#include "gptq/Driver/ArgumentParameters.h"

#include "gptq/Execution/Jit.h"
#include "gptq/Execution/Parameters.h"
#include "gptq/Support/Npz.h"
#include "gptq/Support/Safetensors.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>

using namespace mlir;
using namespace mlir::gptq;

namespace {
/// One tensor of the archive, in its mapped file.
struct ArchiveTensor {
  std::optional<DType> dtype;
  std::string dtypeName;
  std::vector<int64_t> shape;
  llvm::StringRef data;
};

struct Archive {
  std::shared_ptr<llvm::MemoryBuffer> file;
  llvm::StringMap<ArchiveTensor> tensors;
  /// The names in the archive's order.
  std::vector<std::string> names;
};

llvm::Expected<Archive> readArchive(llvm::StringRef path) {
  Archive archive;
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file)
    return llvm::createStringError("cannot read '" + path +
                                   "': " + file.getError().message());
  archive.file = std::move(*file);
  llvm::StringRef bytes = archive.file->getBuffer();
  auto add = [&](const std::string &name, ArchiveTensor tensor) {
    archive.names.push_back(name);
    archive.tensors[name] = std::move(tensor);
  };
  if (path.ends_with(".safetensors")) {
    auto tensors = parseSafetensors(bytes, path);
    if (!tensors)
      return tensors.takeError();
    for (SafetensorsTensor &t : *tensors)
      add(t.name, {t.element, t.dtype, t.shape, t.data});
  } else if (path.ends_with(".npz")) {
    auto arrays = parseNpzInPlace(bytes, path);
    if (!arrays)
      return arrays.takeError();
    for (NpzView &a : *arrays)
      add(a.name, {a.array.dtype, dtypeName(a.array.dtype).str(), a.array.shape,
                   a.array.data});
  } else {
    return llvm::createStringError(
        "'" + path + "': expected a .safetensors or .npz archive");
  }
  return archive;
}

/// The location name of argument `index`, if it has one.
std::optional<std::string> argumentName(func::FuncOp func, unsigned index) {
  Location loc = func.getArgument(index).getLoc();
  if (auto name = loc->findInstanceOf<NameLoc>())
    return name.getName().str();
  return std::nullopt;
}

std::string shapeString(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? ", " : "") + std::to_string(d);
  return s + "]";
}
} // namespace

FailureOr<BoundArguments> mlir::gptq::bindArgumentParameters(
    func::FuncOp func, llvm::StringRef path,
    llvm::function_ref<InFlightDiagnostic(Location)> fail) {
  std::string option = "parameters=" + path.str();
  auto archive = readArchive(path);
  if (!archive) {
    fail(func.getLoc()) << option << ": "
                        << llvm::toString(archive.takeError());
    return failure();
  }
  // Each argument's key: its location name when the archive has it, else
  // arg<i>.
  std::vector<std::optional<std::string>> keys(func.getNumArguments());
  llvm::StringMap<unsigned> boundBy;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    std::optional<std::string> name = argumentName(func, i);
    for (std::string key : {name.value_or(""), "arg" + std::to_string(i)})
      if (!key.empty() && archive->tensors.count(key) && !keys[i]) {
        if (boundBy.count(key)) {
          fail(func.getLoc())
              << option << ": tensor '" << key << "' names arguments #"
              << boundBy[key] << " and #" << i << " of '@" << func.getSymName()
              << "'";
          return failure();
        }
        keys[i] = key;
        boundBy[key] = i;
      }
  }
  for (const std::string &name : archive->names)
    if (!boundBy.count(name)) {
      std::string names;
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        names += (i ? ", " : "") +
                 argumentName(func, i).value_or("arg" + std::to_string(i));
      fail(func.getLoc())
          << option << ": tensor '" << name << "' names no argument of '@"
          << func.getSymName() << "' (arguments are bound by their location "
          << "names, which JAX prints with as_text(debug_info=True), or as "
             "arg<i>; these are: "
          << names << ")";
      return failure();
    }

  BoundArguments bound;
  OpBuilder b(func.getBody());
  llvm::BitVector erase(func.getNumArguments());
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    if (!keys[i])
      continue;
    const ArchiveTensor &tensor = archive->tensors[*keys[i]];
    BlockArgument arg = func.getArgument(i);
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    std::optional<DType> want =
        type ? dtypeOfElementType(type.getElementType()) : std::nullopt;
    if (!type || !type.hasStaticShape() || !want || !tensor.dtype ||
        *tensor.dtype != *want || !llvm::equal(type.getShape(), tensor.shape)) {
      std::string typeText;
      llvm::raw_string_ostream(typeText) << arg.getType();
      fail(func.getLoc()) << option << ": tensor '" << *keys[i] << "' is "
                          << tensor.dtypeName << " "
                          << shapeString(tensor.shape) << ", but argument #"
                          << i << " of '@" << func.getSymName() << "' is "
                          << typeText;
      return failure();
    }
    AsmResourceBlob blob =
        archiveBlob(ArrayRef<char>(tensor.data.data(), tensor.data.size()),
                    dtypeSize(*want), archive->file);
    auto values =
        DenseResourceElementsAttr::get(type, *keys[i], std::move(blob));
    Value constant =
        arith::ConstantOp::create(b, arg.getLoc(), type, values).getResult();
    arg.replaceAllUsesWith(constant);
    bound.arguments.push_back(
        {i, type, func.getArgAttrDict(i), arg.getLoc(), *keys[i]});
    erase.set(i);
  }
  if (bound.arguments.empty()) {
    fail(func.getLoc()) << option << ": binds no argument of '@"
                        << func.getSymName() << "'";
    return failure();
  }
  if (failed(func.eraseArguments(erase)))
    return failure();
  return bound;
}

LogicalResult mlir::gptq::restoreBoundArguments(func::FuncOp func,
                                                const BoundArguments &bound) {
  for (const BoundArguments::Argument &arg : bound.arguments)
    if (failed(func.insertArgument(arg.index, arg.type, arg.attrs, arg.loc)))
      return failure();
  return success();
}
