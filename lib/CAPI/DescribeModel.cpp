//===- DescribeModel.cpp - What a reader of a model needs of its module ---===//
//
// Walks the module's IR: its attributes as typed JSON values, and in each
// function the arith.constant ops of dense_resource tensors and every
// gptq.dequantize, with the constants it reads through gptq.unpack.
//
//===----------------------------------------------------------------------===//

#include "DescribeModel.h"

#include "gptq/Dialect/GPTQ/IR/GPTQ.h"
#include "gptq/Execution/Parameters.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>

using namespace mlir;
using namespace mlir::gptq;

namespace {
/// JSON holds UTF-8 only: other bytes are replaced (llvm::json asserts).
std::string utf8(llvm::StringRef text) {
  return llvm::json::isUTF8(text) ? text.str() : llvm::json::fixUTF8(text);
}

/// An attribute as the JSON value a reader would take it for: strings,
/// integers, floats, booleans, arrays and dictionaries as themselves; a
/// unit attribute as true; anything else (and a number JSON cannot hold)
/// as null.
void writeAttributes(llvm::json::OStream &json,
                     llvm::ArrayRef<NamedAttribute> attrs);

void writeAttribute(llvm::json::OStream &json, Attribute attr) {
  if (auto text = dyn_cast<StringAttr>(attr))
    return json.value(utf8(text.getValue()));
  if (auto flag = dyn_cast<BoolAttr>(attr))
    return json.value(flag.getValue());
  if (auto integer = dyn_cast<IntegerAttr>(attr)) {
    const APInt &v = integer.getValue();
    if (integer.getType().isUnsignedInteger() && v.isIntN(64))
      return json.value(uint64_t(v.getZExtValue()));
    if (!integer.getType().isUnsignedInteger() && v.isSignedIntN(64))
      return json.value(int64_t(v.getSExtValue()));
    return json.value(nullptr);
  }
  if (auto number = dyn_cast<FloatAttr>(attr)) {
    double v = number.getValueAsDouble();
    return std::isfinite(v) ? json.value(v) : json.value(nullptr);
  }
  if (isa<UnitAttr>(attr))
    return json.value(true);
  if (auto array = dyn_cast<ArrayAttr>(attr))
    return json.array([&] {
      for (Attribute element : array)
        writeAttribute(json, element);
    });
  if (auto dictionary = dyn_cast<DictionaryAttr>(attr))
    return json.object([&] { writeAttributes(json, dictionary.getValue()); });
  json.value(nullptr);
}

/// Each attribute as a member of the JSON object being written.
void writeAttributes(llvm::json::OStream &json,
                     llvm::ArrayRef<NamedAttribute> attrs) {
  for (NamedAttribute attr : attrs) {
    json.attributeBegin(utf8(attr.getName().getValue()));
    writeAttribute(json, attr.getValue());
    json.attributeEnd();
  }
}

/// The archive names of gptq.parameters, as loadParameters reads them;
/// an error for a value it would refuse.
llvm::Expected<SmallVector<StringRef>> archiveNames(Attribute attr) {
  SmallVector<StringRef> names;
  if (auto name = dyn_cast<StringAttr>(attr))
    names.push_back(name.getValue());
  else if (auto array = dyn_cast<ArrayAttr>(attr))
    for (Attribute element : array) {
      auto name = dyn_cast<StringAttr>(element);
      names.push_back(name ? name.getValue() : StringRef());
    }
  if (names.empty() || llvm::is_contained(names, StringRef()))
    return llvm::createStringError(
        llvm::formatv("the {0} attribute must be a string naming the "
                      "parameter archive, or an array of such strings, found "
                      "{1}",
                      kParametersAttrName, attr)
            .str());
  return names;
}

/// The dense_resource tensor a constant holds; null for another constant.
DenseResourceElementsAttr resourceOf(arith::ConstantOp constant) {
  auto value = dyn_cast<DenseResourceElementsAttr>(constant.getValue());
  if (!value || !isa<RankedTensorType>(value.getType()) ||
      !value.getType().hasStaticShape())
    return nullptr;
  return value;
}

std::string typeName(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}

/// A static size, or null.
void writeSize(llvm::json::OStream &json, llvm::StringRef key, int64_t size) {
  if (ShapedType::isDynamic(size))
    json.attribute(key, nullptr);
  else
    json.attribute(key, size);
}

/// One function: its resource constants in order, and its quantized
/// layers, each naming its constants by their index in that list (null
/// where an operand is not such a constant).
void writeFunction(llvm::json::OStream &json, func::FuncOp function) {
  llvm::DenseMap<Value, size_t> index;
  json.attribute("name", utf8(function.getSymName()));
  json.attributeArray("constants", [&] {
    function.walk([&](arith::ConstantOp constant) {
      DenseResourceElementsAttr value = resourceOf(constant);
      if (!value)
        return;
      index[constant.getResult()] = index.size();
      DenseResourceElementsHandle handle = value.getRawHandle();
      json.object([&] {
        json.attribute("name", utf8(handle.getKey()));
        json.attribute("element", typeName(value.getElementType()));
        json.attributeArray("shape", [&] {
          for (int64_t size : value.getType().getShape())
            json.value(size);
        });
        json.attribute("inline", handle.getBlob() != nullptr);
      });
    });
  });
  auto constantIndex = [&](llvm::StringRef key, Value value) {
    auto it = index.find(value);
    if (it == index.end())
      json.attribute(key, nullptr);
    else
      json.attribute(key, int64_t(it->second));
  };
  json.attributeArray("layers", [&] {
    function.walk([&](DequantizeOp dequantize) {
      json.object([&] {
        auto unpack = dequantize.getCodes().getDefiningOp<UnpackOp>();
        if (unpack) {
          constantIndex("qweight", unpack.getPacked());
          json.attribute("bits", int64_t(unpack.getBits()));
          auto codes = cast<RankedTensorType>(unpack.getCodes().getType());
          writeSize(json, "out", codes.getDimSize(0));
          writeSize(json, "columns", codes.getDimSize(1));
        } else {
          json.attribute("qweight", nullptr);
        }
        constantIndex("scales", dequantize.getScales());
        constantIndex("zeros", dequantize.getZeros());
        constantIndex("g_idx", dequantize.getGIdx());
      });
    });
  });
}
} // namespace

std::string mlir::gptq::describeModel(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream json(os);
  json.object([&] {
    json.attributeObject("attributes",
                         [&] { writeAttributes(json, module->getAttrs()); });
    Attribute parameters = module->getAttr(kParametersAttrName);
    if (!parameters) {
      json.attribute("parameters", nullptr);
    } else if (auto names = archiveNames(parameters)) {
      json.attributeArray("parameters", [&] {
        for (StringRef name : *names)
          json.value(utf8(name));
      });
    } else {
      json.attributeObject("parameters", [&] {
        json.attribute("error", utf8(llvm::toString(names.takeError())));
      });
    }
    json.attributeArray("functions", [&] {
      for (auto function : module.getOps<func::FuncOp>())
        json.object([&] { writeFunction(json, function); });
    });
  });
  os << "\n";
  return text;
}

AsmResourceBlob *mlir::gptq::findResourceBlob(MLIRContext *context,
                                              llvm::StringRef key) {
  auto &blobs = DenseResourceElementsHandle::getManagerInterface(context)
                    .getBlobManager();
  DialectResourceBlobManager::BlobEntry *entry = blobs.lookup(key);
  return entry ? entry->getBlob() : nullptr;
}
