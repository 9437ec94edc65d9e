//===- Describe.cpp - What a caller needs to know about a module ----------===//

#include "gptq/Execution/Describe.h"

#include "gptq/Dialect/GPTQ/IR/GPTQ.h"
#include "gptq/Execution/Jit.h"

#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::gptq;

/// One argument or result on one line: {"kind": "tensor", "dtype":
/// "int32", "shape": [null, 512]} (null for a dynamic size).
static void writeSpecs(llvm::json::OStream &json, llvm::StringRef key,
                       const std::vector<ArgSpec> &specs) {
  json.attributeArray(key, [&] {
    for (const ArgSpec &spec : specs)
      json.rawValue([&](llvm::raw_ostream &os) {
        os << "{\"kind\": \""
           << (spec.scalar     ? "scalar"
               : spec.isMemRef ? "memref"
                               : "tensor")
           << "\", \"dtype\": \"" << dtypeName(spec.dtype)
           << "\", \"shape\": [";
        for (size_t i = 0; i < spec.shape.size(); ++i) {
          os << (i ? ", " : "");
          if (ShapedType::isDynamic(spec.shape[i]))
            os << "null";
          else
            os << spec.shape[i];
        }
        os << "]}";
      });
  });
}

llvm::Expected<std::string>
mlir::gptq::describeModule(ModuleOp module,
                           std::optional<llvm::StringRef> entry) {
  // With an entry, that function or the error a run would give; without,
  // every function that looks like an entry, each with its signature or
  // with why it cannot be called.
  bool oneEntry = entry.has_value();
  std::vector<std::string> names =
      oneEntry ? std::vector<std::string>{entry->str()} : entryNames(module);
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream json(os, /*IndentSize=*/2);
  llvm::Error failure = llvm::Error::success();
  json.object([&] {
    // The dialect verified the attribute when the module was parsed: a
    // dictionary of i64 integers, and the string `rotary`.
    auto model = module->getAttrOfType<DictionaryAttr>(
        GPTQDialect::ModelAttrHelper::getNameStr());
    if (model)
      json.attributeObject("model", [&] {
        for (NamedAttribute field : model) {
          if (auto text = dyn_cast<StringAttr>(field.getValue()))
            json.attribute(field.getName().getValue(), text.getValue());
          else
            json.attribute(field.getName().getValue(),
                           cast<IntegerAttr>(field.getValue()).getInt());
        }
      });
    else
      json.attribute("model", nullptr);
    json.attributeArray("functions", [&] {
      for (const std::string &name : names) {
        auto signature = entrySignature(module, name);
        if (!signature && oneEntry) {
          failure = signature.takeError();
          return;
        }
        json.object([&] {
          json.attribute("name", name);
          if (!signature) {
            json.attribute("error", llvm::toString(signature.takeError()));
            return;
          }
          writeSpecs(json, "inputs", signature->inputs);
          writeSpecs(json, "results", signature->results);
        });
      }
    });
  });
  if (failure)
    return std::move(failure);
  os << "\n";
  return text;
}
