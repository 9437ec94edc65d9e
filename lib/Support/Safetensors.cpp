//===- Safetensors.cpp - safetensors files and sharded indexes -----------===//

#include "gptq/Support/Safetensors.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::gptq;

namespace {
llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// A name from a file, printable on one line: quoted, with control and
/// non-ASCII bytes escaped, and cut after 200 bytes.
std::string shown(llvm::StringRef name) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << '"';
  os.write_escaped(name.take_front(200), /*UseHexEscapes=*/true);
  os << '"' << (name.size() > 200 ? "..." : "");
  return s;
}

/// Bytes per element of every dtype a header may name.
std::optional<uint64_t> dtypeBytes(llvm::StringRef dtype) {
  return llvm::StringSwitch<std::optional<uint64_t>>(dtype)
      .Cases({"BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0"}, 1)
      .Cases({"I16", "U16", "F16", "BF16"}, 2)
      .Cases({"I32", "U32", "F32"}, 4)
      .Cases({"I64", "U64", "F64"}, 8)
      .Default(std::nullopt);
}

/// A JSON integer >= 0 that fits in int64_t.
std::optional<int64_t> natural(const llvm::json::Value &v) {
  std::optional<int64_t> n = v.getAsInteger();
  if (!n || *n < 0)
    return std::nullopt;
  return n;
}

llvm::Expected<llvm::json::Value> parseBounded(llvm::StringRef text,
                                               llvm::StringRef what) {
  std::string deep = checkJsonStructure(text, kMaxJsonDepth);
  if (!deep.empty())
    return error(what + ": " + deep);
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(text);
  if (!value)
    return error(what + ": not valid JSON: " +
                 llvm::toString(value.takeError()));
  return value;
}
} // namespace

std::string mlir::gptq::checkJsonStructure(llvm::StringRef text,
                                           unsigned maxDepth) {
  // One frame per open array or object: an object's keys so far, and
  // whether its next string is a key.
  struct Frame {
    bool object;
    bool expectKey;
    llvm::StringSet<> keys;
  };
  std::vector<Frame> stack;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      size_t start = ++i;
      while (i < text.size() && text[i] != '"')
        i += text[i] == '\\' ? 2 : 1;
      if (!stack.empty() && stack.back().object && stack.back().expectKey) {
        stack.back().expectKey = false;
        llvm::StringRef key = text.slice(start, std::min(i, text.size()));
        if (!stack.back().keys.insert(key).second)
          return llvm::formatv("the key \"{0}\" is repeated (at byte {1})",
                               key.take_front(200), start - 1)
              .str();
      }
    } else if (c == '[' || c == '{') {
      if (stack.size() >= maxDepth)
        return llvm::formatv("nested more than {0} levels deep (at byte {1})",
                             maxDepth, i)
            .str();
      stack.push_back({c == '{', c == '{', {}});
    } else if ((c == ']' || c == '}') && !stack.empty()) {
      stack.pop_back();
    } else if (c == ',' && !stack.empty() && stack.back().object) {
      stack.back().expectKey = true;
    }
  }
  return "";
}

namespace {
/// The dtypes the tools read, by their safetensors names.
constexpr std::pair<llvm::StringLiteral, DType> kSafetensorsDTypes[] = {
    {"F64", DType::F64}, {"F32", DType::F32}, {"F16", DType::F16},
    {"BF16", DType::BF16}, {"I64", DType::I64}, {"I32", DType::I32},
    {"I16", DType::I16},   {"I8", DType::I8},   {"U8", DType::U8},
    {"BOOL", DType::Bool},
};
} // namespace

std::optional<DType> mlir::gptq::dtypeOfSafetensors(llvm::StringRef dtype) {
  for (const auto &[name, d] : kSafetensorsDTypes)
    if (name == dtype)
      return d;
  return std::nullopt;
}

llvm::StringRef mlir::gptq::safetensorsDTypeName(DType dtype) {
  for (const auto &[name, d] : kSafetensorsDTypes)
    if (d == dtype)
      return name;
  llvm_unreachable("every dtype has a safetensors name");
}

llvm::Expected<std::vector<SafetensorsTensor>>
mlir::gptq::parseSafetensors(llvm::StringRef bytes, llvm::StringRef name) {
  if (bytes.size() < 8)
    return error(name + ": not a safetensors file: " +
                 llvm::Twine(bytes.size()) +
                 " bytes, shorter than the 8-byte header length");
  uint64_t length =
      llvm::support::endian::read64le(reinterpret_cast<const void *>(
          bytes.data()));
  if (length > kMaxSafetensorsHeaderBytes)
    return error(name + ": not a safetensors file: header length " +
                 llvm::Twine(length) + ", more than the " +
                 llvm::Twine(kMaxSafetensorsHeaderBytes) +
                 " bytes a header may have");
  if (8 + length > bytes.size())
    return error(name + ": truncated safetensors file: header length " +
                 llvm::Twine(length) + ", but the file has " +
                 llvm::Twine(bytes.size()) + " bytes");
  llvm::StringRef header = bytes.substr(8, length);
  llvm::StringRef data = bytes.drop_front(8 + length);
  if (!header.starts_with("{"))
    return error(name +
                 ": not a safetensors file: the header is not a JSON object");
  auto parsed = parseBounded(header, (name + ": safetensors header").str());
  if (!parsed)
    return parsed.takeError();
  const llvm::json::Object *object = parsed->getAsObject();
  if (!object)
    return error(name + ": safetensors header: not a JSON object");

  std::vector<SafetensorsTensor> tensors;
  struct Range {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Range> ranges;
  for (const auto &[key, entry] : *object) {
    if (key == "__metadata__") {
      const llvm::json::Object *metadata = entry.getAsObject();
      if (!metadata || llvm::any_of(*metadata, [](const auto &kv) {
            return !kv.second.getAsString();
          }))
        return error(name + ": safetensors header: __metadata__ is not an "
                            "object of strings");
      continue;
    }
    std::string where =
        (name + ": safetensors header: tensor " + shown(key)).str();
    const llvm::json::Object *fields = entry.getAsObject();
    if (!fields)
      return error(where +
                   ": expected an object with dtype, shape and data_offsets");
    SafetensorsTensor tensor;
    tensor.name = key.str();
    std::optional<llvm::StringRef> dtype =
        fields->get("dtype") ? fields->get("dtype")->getAsString()
                             : std::nullopt;
    std::optional<uint64_t> elementBytes =
        dtype ? dtypeBytes(*dtype) : std::nullopt;
    if (!elementBytes)
      return error(where + ": dtype " +
                   (dtype ? shown(*dtype) : std::string("missing")) +
                   ", expected one of BOOL, U8, I8, F8_E5M2, F8_E4M3, "
                   "F8_E8M0, I16, U16, F16, BF16, I32, U32, F32, I64, U64, "
                   "F64");
    tensor.dtype = dtype->str();
    tensor.element = dtypeOfSafetensors(*dtype);
    const llvm::json::Array *shape =
        fields->get("shape") ? fields->get("shape")->getAsArray() : nullptr;
    if (!shape)
      return error(where + ": shape missing, expected a list of sizes >= 0");
    for (const llvm::json::Value &extent : *shape) {
      std::optional<int64_t> n = natural(extent);
      if (!n)
        return error(where + ": shape holds " +
                     llvm::formatv("{0}", extent).str() +
                     ", expected sizes >= 0");
      tensor.shape.push_back(*n);
    }
    const llvm::json::Array *offsets =
        fields->get("data_offsets") ? fields->get("data_offsets")->getAsArray()
                                    : nullptr;
    std::optional<int64_t> begin, end;
    if (offsets && offsets->size() == 2) {
      begin = natural((*offsets)[0]);
      end = natural((*offsets)[1]);
    }
    if (!begin || !end)
      return error(where + ": data_offsets missing or malformed, expected "
                           "[begin, end]");
    if (*begin > *end || uint64_t(*end) > data.size())
      return error(where + ": data_offsets [" + llvm::Twine(*begin) + ", " +
                   llvm::Twine(*end) + "] outside the file's " +
                   llvm::Twine(data.size()) + " bytes of data");
    std::optional<int64_t> expected =
        checkedByteCount(tensor.shape, *elementBytes);
    if (!expected || *expected != *end - *begin)
      return error(where + ": " + llvm::Twine(*end - *begin) +
                   " bytes of data, but " + tensor.dtype + " of its shape " +
                   (expected ? "needs " + llvm::Twine(*expected)
                             : llvm::Twine("is too large")));
    tensor.data = data.slice(*begin, *end);
    ranges.push_back({uint64_t(*begin), uint64_t(*end), tensors.size()});
    tensors.push_back(std::move(tensor));
  }
  llvm::sort(ranges, [](const Range &a, const Range &b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  uint64_t position = 0;
  for (const Range &r : ranges) {
    if (r.begin != position)
      return error(name + ": safetensors header: tensor " +
                   shown(tensors[r.index].name) + " at [" +
                   llvm::Twine(r.begin) + ", " + llvm::Twine(r.end) + "] " +
                   (r.begin < position
                        ? llvm::Twine("overlaps the tensor before it")
                        : "leaves bytes " + llvm::Twine(position) + ".." +
                              llvm::Twine(r.begin) + " unused"));
    position = r.end;
  }
  if (position != data.size())
    return error(name + ": safetensors header: the tensors end at byte " +
                 llvm::Twine(position) + " of " + llvm::Twine(data.size()) +
                 " bytes of data");
  return tensors;
}

llvm::Expected<llvm::StringMap<std::string>>
mlir::gptq::parseSafetensorsIndex(llvm::StringRef bytes,
                                  llvm::StringRef name) {
  if (bytes.size() > kMaxIndexBytes)
    return error(name + ": " + llvm::Twine(bytes.size()) +
                 " bytes, more than the " + llvm::Twine(kMaxIndexBytes) +
                 " an index may have");
  auto parsed = parseBounded(bytes, name);
  if (!parsed)
    return parsed.takeError();
  const llvm::json::Object *object = parsed->getAsObject();
  const llvm::json::Object *weightMap =
      object ? object->getObject("weight_map") : nullptr;
  if (!weightMap)
    return error(name + ": expected a weight_map object of tensor name -> "
                        "file name");
  llvm::StringMap<std::string> shards;
  for (const auto &[tensor, file] : *weightMap) {
    std::optional<llvm::StringRef> fileName = file.getAsString();
    if (!fileName || fileName->empty() || fileName->contains('/') ||
        fileName->contains('\0') || *fileName == "." || *fileName == "..")
      return error(name + ": tensor " + shown(tensor) + " is in " +
                   (fileName ? shown(*fileName)
                             : llvm::formatv("{0}", file).str()) +
                   ", expected a file name in the folder");
    shards[tensor] = fileName->str();
  }
  return shards;
}

llvm::Error mlir::gptq::writeSafetensors(
    llvm::raw_ostream &os, llvm::ArrayRef<SafetensorsEntry> tensors,
    llvm::function_ref<void(const SafetensorsEntry &)> written) {
  std::vector<const SafetensorsEntry *> order;
  llvm::StringSet<> names;
  for (const SafetensorsEntry &t : tensors) {
    if (!names.insert(t.name).second)
      return error("tensor '" + t.name + "' twice in one safetensors file");
    order.push_back(&t);
  }
  llvm::stable_sort(order, [](const SafetensorsEntry *a,
                              const SafetensorsEntry *b) {
    return (a->data.size() % 64 == 0) > (b->data.size() % 64 == 0);
  });
  llvm::json::Object header;
  uint64_t offset = 0;
  for (const SafetensorsEntry *t : order) {
    llvm::json::Array shape;
    for (int64_t d : t->shape)
      shape.push_back(d);
    header[t->name] = llvm::json::Object{
        {"dtype", safetensorsDTypeName(t->dtype)},
        {"shape", std::move(shape)},
        {"data_offsets", llvm::json::Array{offset, offset + t->data.size()}}};
    offset += t->data.size();
  }
  header["__metadata__"] = llvm::json::Object{{"format", "pt"}};
  std::string text;
  llvm::raw_string_ostream textStream(text);
  textStream << llvm::json::Value(std::move(header));
  // The header is padded with spaces, which JSON allows after the value.
  text.append((64 - (8 + text.size()) % 64) % 64, ' ');
  char length[8];
  llvm::support::endian::write64le(length, text.size());
  os.write(length, 8);
  os << text;
  for (const SafetensorsEntry *t : order) {
    os.write(t->data.data(), t->data.size());
    if (written)
      written(*t);
  }
  return llvm::Error::success();
}
