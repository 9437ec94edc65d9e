//===- GPTQDialect.cpp - GPTQ dialect -------------------------------------===//

#include "gptq/Dialect/GPTQ/IR/GPTQ.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::gptq;

#include "gptq/Dialect/GPTQ/IR/GPTQOpsDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "gptq/Dialect/GPTQ/IR/GPTQAttrs.cpp.inc"

void GPTQDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "gptq/Dialect/GPTQ/IR/GPTQAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "gptq/Dialect/GPTQ/IR/GPTQOps.cpp.inc"
      >();
}

namespace {
/// The keys of `gptq.model`, in the order the dictionary keeps them.
constexpr llvm::StringLiteral kModelKeys[] = {
    "dim",      "hidden_dim", "n_heads",   "n_kv_heads",
    "n_layers", "seq_len",    "vocab_size"};

/// The keys a module may add: the head size, when it is not dim / n_heads;
/// the order of each head's q and k features, which the rotary embedding
/// rotates in pairs: "pairs" (llama2.c's, the default: features 2i and
/// 2i + 1) or "halves" (Hugging Face's: features i and i + head size / 2).
constexpr llvm::StringLiteral kHeadDimKey = "head_dim";
constexpr llvm::StringLiteral kRotaryKey = "rotary";

std::string modelKeyList() {
  std::string list;
  for (llvm::StringRef key : kModelKeys)
    list += (list.empty() ? "" : ", ") + key.str();
  return list + ", and optionally " + kHeadDimKey.str() + " and " +
         kRotaryKey.str();
}

/// The value of `key` as a positive i64, or an error at `op`.
FailureOr<int64_t> positiveField(Operation *op, llvm::StringRef name,
                                 llvm::StringRef key, Attribute field) {
  auto integer = dyn_cast<IntegerAttr>(field);
  if (!integer || !integer.getType().isSignlessInteger(64))
    return emitError(op->getLoc())
           << "expected '" << name << "' key '" << key
           << "' to be an i64 integer, found " << field;
  if (integer.getInt() < 1)
    return emitError(op->getLoc())
           << "expected '" << name << "' key '" << key
           << "' to be positive, found " << integer.getInt();
  return integer.getInt();
}

/// Errors are reported at the module's location without the usual note that
/// prints the operation: that would be the whole model.
LogicalResult verifyModelAttribute(Operation *op, Attribute value) {
  llvm::StringRef name = GPTQDialect::ModelAttrHelper::getNameStr();
  if (!isa<ModuleOp>(op))
    return emitError(op->getLoc())
           << "'" << name
           << "' is a module attribute: expected it on a "
              "builtin.module, found it on '"
           << op->getName() << "'";
  auto dict = dyn_cast<DictionaryAttr>(value);
  if (!dict)
    return emitError(op->getLoc())
           << "expected '" << name << "' to be a dictionary, found " << value;
  for (NamedAttribute entry : dict)
    if (!llvm::is_contained(kModelKeys, entry.getName().getValue()) &&
        entry.getName().getValue() != kHeadDimKey &&
        entry.getName().getValue() != kRotaryKey)
      return emitError(op->getLoc())
             << "'" << name << "' has unknown key '"
             << entry.getName().getValue() << "' (expected the keys "
             << modelKeyList() << ")";
  llvm::StringMap<int64_t> values;
  for (llvm::StringRef key : kModelKeys) {
    Attribute field = dict.get(key);
    if (!field)
      return emitError(op->getLoc())
             << "'" << name << "' is missing key '" << key
             << "' (expected the keys " << modelKeyList() << ")";
    FailureOr<int64_t> value = positiveField(op, name, key, field);
    if (failed(value))
      return failure();
    values[key] = *value;
  }
  if (Attribute rotary = dict.get(kRotaryKey)) {
    auto text = dyn_cast<StringAttr>(rotary);
    if (!text || (text.getValue() != "pairs" && text.getValue() != "halves"))
      return emitError(op->getLoc())
             << "expected '" << name << "' key '" << kRotaryKey
             << "' to be \"pairs\" or \"halves\", found " << rotary;
  }
  int64_t dim = values["dim"], heads = values["n_heads"],
          kvHeads = values["n_kv_heads"];
  // An explicit head size (Gemma 2, Qwen 3): q has n_heads * head_dim
  // features, whatever dim is; else the head size is dim / n_heads.
  Attribute headDimField = dict.get(kHeadDimKey);
  if (headDimField) {
    FailureOr<int64_t> headDim =
        positiveField(op, name, kHeadDimKey, headDimField);
    if (failed(headDim))
      return failure();
    if (*headDim % 2 != 0)
      return emitError(op->getLoc())
             << "expected '" << name << "' to give an even head size, found "
             << kHeadDimKey << " = " << *headDim;
  } else if (dim % heads != 0) {
    return emitError(op->getLoc())
           << "expected '" << name
           << "' dim to be a multiple of n_heads, found dim = " << dim
           << " and n_heads = " << heads;
  }
  if (heads % kvHeads != 0)
    return emitError(op->getLoc())
           << "expected '" << name
           << "' n_heads to be a multiple of n_kv_heads, found n_heads = "
           << heads << " and n_kv_heads = " << kvHeads;
  if (!headDimField && (dim / heads) % 2 != 0)
    return emitError(op->getLoc())
           << "expected '" << name
           << "' to give an even head size dim / n_heads, "
              "found "
           << dim << " / " << heads << " = " << dim / heads;
  return success();
}
} // namespace

LogicalResult GPTQDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attribute) {
  if (attribute.getName().getValue() == ModelAttrHelper::getNameStr())
    return verifyModelAttribute(op, attribute.getValue());
  // Other gptq.* attributes (gptq.signature, gptq.hessians, ...) belong to
  // the passes that set them.
  return success();
}
