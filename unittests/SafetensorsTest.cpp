//===- SafetensorsTest.cpp - safetensors headers and indexes --------------===//
//
// The reader's checks, one malformed file each: every one is a one-line
// error naming the file (and the tensor where one is at fault), never a
// crash. test/Tools/safetensors-parameters.test runs the tools on files.
//
//===----------------------------------------------------------------------===//

#include "gptq/Support/Safetensors.h"

#include "llvm/Support/Endian.h"

#include <cmath>
#include <cstring>
#include <gtest/gtest.h>

using namespace mlir::gptq;

namespace {
/// A safetensors file: the header's length, the header, the data.
std::string file(const std::string &header, const std::string &data = "") {
  std::string bytes(8, '\0');
  llvm::support::endian::write64le(bytes.data(), header.size());
  return bytes + header + data;
}

std::string parseError(const std::string &bytes) {
  auto tensors = parseSafetensors(bytes, "f.safetensors");
  if (tensors) {
    ADD_FAILURE() << "expected an error";
    return "";
  }
  return llvm::toString(tensors.takeError());
}

TEST(Safetensors, ReadsTensorsInPlace) {
  std::string data = std::string("\x80\x3f\x00\x40", 4) + "abcdefgh";
  std::string bytes = file(
      R"({"w": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]},)"
      R"( "b": {"dtype": "F8_E4M3", "shape": [2, 4], "data_offsets": [4, 12]},)"
      R"( "__metadata__": {"format": "pt"}})",
      data);
  auto tensors = parseSafetensors(bytes, "f.safetensors");
  ASSERT_TRUE(static_cast<bool>(tensors)) << llvm::toString(tensors.takeError());
  ASSERT_EQ(tensors->size(), 2u);
  const SafetensorsTensor *w = nullptr, *b = nullptr;
  for (const SafetensorsTensor &t : *tensors)
    (t.name == "w" ? w : b) = &t;
  ASSERT_TRUE(w && b);
  EXPECT_EQ(w->element, DType::BF16);
  EXPECT_EQ(w->shape, std::vector<int64_t>{2});
  EXPECT_EQ(w->data.data(), bytes.data() + bytes.size() - data.size());
  EXPECT_EQ(bfloat16ToFloat(0x3f80), 1.0f);
  // A dtype the tools do not read is listed, without an element type.
  EXPECT_EQ(b->dtype, "F8_E4M3");
  EXPECT_FALSE(b->element.has_value());
}

TEST(Safetensors, RefusesMalformedFiles) {
  EXPECT_EQ(parseError("abc"), "f.safetensors: not a safetensors file: 3 "
                               "bytes, shorter than the 8-byte header length");
  std::string huge(8, '\xff');
  EXPECT_NE(parseError(huge).find("more than the 100000000 bytes"),
            std::string::npos);
  EXPECT_NE(parseError(file("x{}")).find("the header is not a JSON object"),
            std::string::npos);
  EXPECT_NE(parseError(file("{}").substr(0, 9)).find("truncated safetensors "
                                                     "file: header length 2, "
                                                     "but the file has 9 bytes"),
            std::string::npos);
  EXPECT_NE(parseError(file("[1]")).find("not a JSON object"),
            std::string::npos);
  EXPECT_NE(parseError(file(R"({"a": {"dtype": "F32", "dtype": "F16"}})"))
                .find("the key \"dtype\" is repeated"),
            std::string::npos);
  EXPECT_NE(parseError(file(R"({"a": 1, "b": [{"c": 1}, {"c": 2}], "a": 2})"))
                .find("the key \"a\" is repeated (at byte 36)"),
            std::string::npos);
  EXPECT_NE(parseError(file(R"({"__metadata__": {"k": 1}})"))
                .find("__metadata__ is not an object of strings"),
            std::string::npos);
  EXPECT_NE(parseError(file(R"({"w": {"dtype": "F31", "shape": [1],)"
                            R"( "data_offsets": [0, 4]}})",
                            "abcd"))
                .find("tensor \"w\": dtype \"F31\", expected one of"),
            std::string::npos);
  EXPECT_NE(parseError(file(R"({"w": {"dtype": "F32", "shape": [-1],)"
                            R"( "data_offsets": [0, 4]}})",
                            "abcd"))
                .find("tensor \"w\": shape holds -1, expected sizes >= 0"),
            std::string::npos);
  // A shape whose bytes overflow is refused, not wrapped.
  EXPECT_NE(parseError(file(R"({"w": {"dtype": "F32", "shape": )"
                            R"([4611686018427387904, 4], "data_offsets": [0, 4]}})",
                            "abcd"))
                .find("of its shape is too large"),
            std::string::npos);
  EXPECT_NE(parseError(file(R"({"w": {"dtype": "F32", "shape": [2],)"
                            R"( "data_offsets": [0, 4]}})",
                            "abcd"))
                .find("4 bytes of data, but F32 of its shape needs 8"),
            std::string::npos);
  EXPECT_NE(parseError(file(R"({"w": {"dtype": "F32", "shape": [1],)"
                            R"( "data_offsets": [4, 8]}})",
                            "abcdefgh"))
                .find("leaves bytes 0..4 unused"),
            std::string::npos);
  EXPECT_NE(parseError(file(R"({"w": {"dtype": "F32", "shape": [1],)"
                            R"( "data_offsets": [0, 4]}})",
                            "abcdefgh"))
                .find("the tensors end at byte 4 of 8 bytes of data"),
            std::string::npos);
  std::string deep = "{\"x\": " + std::string(100, '[') +
                     std::string(100, ']') + "}";
  EXPECT_NE(parseError(file(deep)).find("nested more than 64 levels deep"),
            std::string::npos);
  // Brackets inside strings do not count.
  EXPECT_EQ(checkJsonStructure("{\"[[[[\": \"\\\"[[[\"}", 1), "");
}

TEST(Safetensors, Index) {
  auto shards = parseSafetensorsIndex(
      R"({"metadata": {}, "weight_map": {"a": "one.safetensors", "b": "two.safetensors"}})",
      "i.json");
  ASSERT_TRUE(static_cast<bool>(shards)) << llvm::toString(shards.takeError());
  EXPECT_EQ(shards->lookup("b"), "two.safetensors");
  for (const char *bad : {R"({"weight_map": {"a": "../x.safetensors"}})",
                          R"({"weight_map": {"a": 3}})", R"({"weight_map": {"a": ""}})"}) {
    auto refused = parseSafetensorsIndex(bad, "i.json");
    ASSERT_FALSE(static_cast<bool>(refused)) << bad;
    EXPECT_NE(llvm::toString(refused.takeError())
                  .find("expected a file name in the folder"),
              std::string::npos);
  }
  auto none = parseSafetensorsIndex("{}", "i.json");
  ASSERT_FALSE(static_cast<bool>(none));
  EXPECT_EQ(llvm::toString(none.takeError()),
            "i.json: expected a weight_map object of tensor name -> file name");
}

TEST(Safetensors, HalfPrecisionWidensExactly) {
  EXPECT_EQ(halfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(halfToFloat(0xc000), -2.0f);
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24)); // smallest subnormal
  EXPECT_EQ(halfToFloat(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(halfToFloat(0x7bff), 65504.0f);
  EXPECT_TRUE(std::isinf(halfToFloat(0x7c00)));
  EXPECT_TRUE(std::isnan(halfToFloat(0x7e00)));
  EXPECT_TRUE(std::signbit(halfToFloat(0x8000)));
}
} // namespace
