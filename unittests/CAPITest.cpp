//===- CAPITest.cpp - The C interface of the JIT, as a C client uses it ---===//
//
// Linked against libGPTQCAPI.so alone: what it exports is all a client has.
// A module opened once serves many calls; every bad input is an error value
// naming it; results are the caller's and outlive the module.
//
//===----------------------------------------------------------------------===//

#include "gptq-c/Run.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

const char *kModule = R"mlir(
func.func @add(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %r = linalg.add ins(%a, %b : tensor<?xf32>, tensor<?xf32>) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}
func.func @checked(%t: tensor<?xi32>) -> (tensor<?xi32>, tensor<?xi32>) {
  %c0 = arith.constant 0 : index
  %c10 = arith.constant 10 : i32
  %v = tensor.extract %t[%c0] : tensor<?xi32>
  %ok = arith.cmpi slt, %v, %c10 : i32
  cf.assert %ok, "checked: the first value must be below 10"
  %n = tensor.dim %t, %c0 : tensor<?xi32>
  %e = tensor.empty(%n) : tensor<?xi32>
  %r = linalg.add ins(%t, %t : tensor<?xi32>, tensor<?xi32>) outs(%e : tensor<?xi32>) -> tensor<?xi32>
  return %r, %t : tensor<?xi32>, tensor<?xi32>
}
func.func @store(%v: tensor<2xf32>, %at: i64, %cache: memref<?x2xf32>) -> tensor<2xf32> {
  %c = bufferization.to_tensor %cache restrict writable : memref<?x2xf32> to tensor<?x2xf32>
  %i = arith.index_cast %at : i64 to index
  %row = tensor.expand_shape %v [[0, 1]] output_shape [1, 2] : tensor<2xf32> into tensor<1x2xf32>
  %u = tensor.insert_slice %row into %c[%i, 0] [1, 2] [1, 1] : tensor<1x2xf32> into tensor<?x2xf32>
  bufferization.materialize_in_destination %u in restrict writable %cache : (tensor<?x2xf32>, memref<?x2xf32>) -> ()
  return %v : tensor<2xf32>
}
)mlir";

/// A file in a fresh temporary directory, removed with it.
class TempFile {
public:
  TempFile(const std::string &name, const std::string &text) {
    char pattern[] = "/tmp/gptq-capi-XXXXXX";
    dir = mkdtemp(pattern);
    path = dir + "/" + name;
    std::ofstream(path) << text;
  }
  ~TempFile() {
    std::remove(path.c_str());
    rmdir(dir.c_str());
  }
  std::string dir, path;
};

/// The error's message, the error freed; "" for success.
std::string take(GptqError *error) {
  if (!error)
    return "";
  std::string message = gptqErrorMessage(error);
  gptqErrorFree(error);
  return message;
}

GptqBuffer buffer(std::vector<float> &v, const int64_t *shape) {
  return GptqBuffer{GPTQ_FLOAT32, 1, shape, v.data()};
}

class CAPITest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(take(gptqModuleOpen(file.path.c_str(), "", &module)), "");
    ASSERT_NE(module, nullptr);
  }
  void TearDown() override { gptqModuleFree(module); }
  TempFile file{"m.mlir", kModule};
  GptqModule *module = nullptr;
};

TEST_F(CAPITest, CompilesOnceAndCallsManyTimesOnTheCallersBuffers) {
  double seconds = -1;
  ASSERT_EQ(take(gptqModuleCompile(module, "add", &seconds)), "");
  EXPECT_GE(seconds, 0.0);
  std::vector<float> a = {1, 2, 3}, b = {10, 20, 30};
  int64_t shape[] = {3};
  for (int round = 0; round < 3; ++round) {
    a[0] = float(round);
    GptqBuffer args[] = {buffer(a, shape), buffer(b, shape)};
    GptqArray *results[1] = {nullptr};
    size_t count = 0;
    ASSERT_EQ(take(gptqModuleCall(module, "add", args, 2, results, 1, &count)),
              "");
    ASSERT_EQ(count, 1u);
    GptqBuffer r = gptqArrayBuffer(results[0]);
    EXPECT_EQ(r.dtype, GPTQ_FLOAT32);
    ASSERT_EQ(r.rank, 1);
    EXPECT_EQ(r.shape[0], 3);
    EXPECT_EQ(gptqArrayByteSize(results[0]), 12u);
    const float *v = static_cast<const float *>(r.data);
    EXPECT_EQ(v[0], 10.0f + float(round));
    EXPECT_EQ(v[2], 33.0f);
    gptqArrayFree(results[0]);
  }
  // The compiled entry is kept: compiling again takes no new time.
  double again = -1;
  ASSERT_EQ(take(gptqModuleCompile(module, "add", &again)), "");
  EXPECT_EQ(again, seconds);
}

TEST_F(CAPITest, DescribesTheEntries) {
  const char *json = nullptr;
  ASSERT_EQ(take(gptqModuleDescribe(module, nullptr, &json)), "");
  std::string text = json;
  EXPECT_NE(text.find("\"name\": \"add\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"name\": \"checked\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"kind\": \"memref\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"model\": null"), std::string::npos) << text;
  ASSERT_EQ(take(gptqModuleDescribe(module, "checked", &json)), "");
  EXPECT_EQ(std::string(json).find("\"add\""), std::string::npos) << json;
  EXPECT_EQ(take(gptqModuleDescribe(module, "nope", &json)),
            file.path + ": no function 'nope' in the module (functions: add, "
                        "checked, store)");
}

TEST_F(CAPITest, BadArgumentsAreErrorsNamingThem) {
  std::vector<float> a = {1, 2, 3};
  int64_t shape[] = {3}, wrongShape[] = {2, 2}, negative[] = {-1};
  GptqArray *results[2] = {nullptr, nullptr};
  size_t count = 7;
  auto call = [&](const char *entry, std::vector<GptqBuffer> args,
                  size_t capacity = 2) {
    return take(gptqModuleCall(module, entry, args.data(), args.size(), results,
                               capacity, &count));
  };
  EXPECT_EQ(call("add", {buffer(a, shape)}),
            "@add: 'add' takes 2 argument(s), 1 given");
  EXPECT_EQ(call("add", {buffer(a, shape), {GPTQ_INT32, 1, shape, a.data()}}),
            "@add: argument #1: expected float32 [?], found int32 [3]");
  EXPECT_EQ(
      call("add", {buffer(a, shape), {GPTQ_FLOAT32, 2, wrongShape, a.data()}}),
      "@add: argument #1: expected float32 [?], found float32 [2, 2]");
  EXPECT_EQ(
      call("add", {buffer(a, shape), {GPTQ_FLOAT32, 1, negative, a.data()}}),
      "@add: argument 1: sizes that are negative or overflow");
  EXPECT_EQ(
      call("add", {buffer(a, shape), {GptqDType(42), 1, shape, a.data()}}),
      "@add: argument 1: unknown dtype 42");
  EXPECT_EQ(call("add", {buffer(a, shape), {GPTQ_FLOAT32, 1, shape, nullptr}}),
            "@add: argument 1: null data");
  EXPECT_EQ(call("add", {buffer(a, shape), buffer(a, shape)}, 0),
            "@add returns 1 results; room was given for 0");
  EXPECT_EQ(call("nope", {}), file.path + ": no function 'nope' in the module "
                                          "(functions: add, checked, store)");
  // The code's own run-time check, with where it is in the module.
  std::vector<int32_t> big = {12, 1};
  int64_t two[] = {2};
  std::string failed = call("checked", {{GPTQ_INT32, 1, two, big.data()}});
  EXPECT_NE(failed.find("checked: the first value must be below 10"),
            std::string::npos)
      << failed;
  EXPECT_NE(failed.find(file.path + ":"), std::string::npos) << failed;
  // Nothing was handed out by the failures.
  EXPECT_EQ(results[0], nullptr);
  EXPECT_EQ(count, 7u);
  // And the module still works.
  std::vector<int32_t> small = {3, 4};
  ASSERT_EQ(call("checked", {{GPTQ_INT32, 1, two, small.data()}}), "");
  ASSERT_EQ(count, 2u);
  EXPECT_EQ(static_cast<int32_t *>(gptqArrayBuffer(results[0]).data)[1], 8);
  EXPECT_EQ(static_cast<int32_t *>(gptqArrayBuffer(results[1]).data)[1], 4);
  gptqArrayFree(results[0]);
  gptqArrayFree(results[1]);
}

TEST_F(CAPITest, MemRefArgumentsAreWrittenInPlace) {
  std::vector<float> cache(6, -1.0f), row = {7, 8};
  int64_t cacheShape[] = {3, 2}, rowShape[] = {2};
  for (int64_t at : {2, 0}) {
    GptqBuffer args[] = {buffer(row, rowShape),
                         {GPTQ_INT64, 0, nullptr, &at},
                         {GPTQ_FLOAT32, 2, cacheShape, cache.data()}};
    GptqArray *result = nullptr;
    size_t count = 0;
    ASSERT_EQ(
        take(gptqModuleCall(module, "store", args, 3, &result, 1, &count)), "");
    gptqArrayFree(result);
    row[0] += 1;
  }
  EXPECT_EQ(cache, (std::vector<float>{8, 8, -1, -1, 7, 8}));
}

TEST_F(CAPITest, ResultsOutliveTheModule) {
  std::vector<float> a = {1, 2}, b = {3, 4};
  int64_t shape[] = {2};
  GptqBuffer args[] = {buffer(a, shape), buffer(b, shape)};
  GptqArray *result = nullptr;
  size_t count = 0;
  ASSERT_EQ(take(gptqModuleCall(module, "add", args, 2, &result, 1, &count)),
            "");
  gptqModuleFree(module);
  module = nullptr;
  EXPECT_EQ(static_cast<float *>(gptqArrayBuffer(result).data)[1], 6.0f);
  gptqArrayFree(result);
}

TEST(CAPIOpen, BadFilesAreErrors) {
  GptqModule *module = reinterpret_cast<GptqModule *>(1);
  std::string missing =
      take(gptqModuleOpen("/nonexistent/m.mlir", "", &module));
  EXPECT_NE(missing.find("/nonexistent/m.mlir"), std::string::npos) << missing;
  EXPECT_EQ(module, nullptr);
  TempFile bad("bad.mlir", "func.func @f( {\n");
  std::string parse = take(gptqModuleOpen(bad.path.c_str(), "", &module));
  EXPECT_NE(parse.find(bad.path + ":1:"), std::string::npos) << parse;
  EXPECT_NE(parse.find("error:"), std::string::npos) << parse;
  EXPECT_EQ(module, nullptr);
  module = reinterpret_cast<GptqModule *>(1);
  EXPECT_EQ(take(gptqModuleOpen(nullptr, "", &module)),
            "gptqModuleOpen: a null path or result");
  EXPECT_EQ(module, nullptr);
  EXPECT_EQ(std::string(gptqErrorMessage(nullptr)), "out of memory");
}

TEST(CAPIOpen, OnlyRegularFilesAreOpened) {
  // A FIFO with no writer would block the open for ever, a device such as
  // /dev/zero never end: both are refused at once, by name.
  TempFile dir("unused", "");
  std::string fifo = dir.dir + "/m.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  GptqModule *module = nullptr;
  for (const std::string &path : {fifo, std::string("/dev/zero"), dir.dir}) {
    std::string message = take(gptqModuleOpen(path.c_str(), "", &module));
    EXPECT_NE(message.find("'" + path + "'"), std::string::npos) << message;
    EXPECT_EQ(module, nullptr);
  }
  EXPECT_NE(take(gptqModuleOpen(fifo.c_str(), "", &module))
                .find("not a regular file"),
            std::string::npos);
  std::remove(fifo.c_str());
}

TEST_F(CAPITest, FreedHandlesAreErrorsNotCrashes) {
  GptqModule *freed = module;
  gptqModuleFree(module);
  module = nullptr;
  std::vector<float> a = {1, 2};
  int64_t shape[] = {2};
  GptqBuffer args[] = {buffer(a, shape), buffer(a, shape)};
  GptqArray *result = nullptr;
  size_t count = 0;
  std::string message =
      take(gptqModuleCall(freed, "add", args, 2, &result, 1, &count));
  EXPECT_NE(message.find("gptqModuleCall: not an open module"),
            std::string::npos)
      << message;
  const char *json = nullptr;
  EXPECT_NE(take(gptqModuleDescribe(freed, nullptr, &json)), "");
  EXPECT_NE(take(gptqModuleCompile(freed, "add", nullptr)), "");
  EXPECT_NE(take(gptqModuleNumResults(freed, "add", &count)), "");
  EXPECT_NE(take(gptqModuleCall(nullptr, "add", args, 2, &result, 1, &count)),
            "");
  // Freeing again, or freeing null, does nothing.
  gptqModuleFree(freed);
  gptqModuleFree(nullptr);
  // A module opened later never gets the freed handle (the allocator
  // hands the freed memory out again at once).
  GptqModule *later = nullptr;
  ASSERT_EQ(take(gptqModuleOpen(file.path.c_str(), "", &later)), "");
  EXPECT_NE(later, freed);
  EXPECT_NE(take(gptqModuleDescribe(freed, nullptr, &json)), "");
  gptqModuleFree(later);
}

TEST_F(CAPITest, EntryNamesThatWouldBreakTheMessageLineAreRefused) {
  const char *json = nullptr;
  EXPECT_EQ(take(gptqModuleDescribe(module, "a\nb", &json)),
            "an entry name with a control character (byte 10)");
  EXPECT_EQ(take(gptqModuleCompile(module, "add\r", nullptr)),
            "an entry name with a control character (byte 13)");
}

TEST_F(CAPITest, AModuleIsSharedByThreadsAndFreedWhileCalled) {
  ASSERT_EQ(take(gptqModuleCompile(module, "add", nullptr)), "");
  // Threads call one module at once: each gets its own right answer.
  std::atomic<int> wrong{0}, calls{0}, refused{0};
  auto caller = [&](float base) {
    std::vector<float> a(4096, base), b(4096, 1.0f);
    int64_t shape[] = {4096};
    for (;;) {
      GptqBuffer args[] = {buffer(a, shape), buffer(b, shape)};
      GptqArray *result = nullptr;
      size_t count = 0;
      std::string message =
          take(gptqModuleCall(module, "add", args, 2, &result, 1, &count));
      if (!message.empty()) {
        // The module was freed under the loop: refused, never a crash.
        if (message.find("not an open module") == std::string::npos)
          ++wrong;
        ++refused;
        return;
      }
      const float *v = static_cast<const float *>(gptqArrayBuffer(result).data);
      if (v[0] != base + 1.0f || v[4095] != base + 1.0f)
        ++wrong;
      gptqArrayFree(result);
      ++calls;
    }
  };
  std::thread t1(caller, 1.0f), t2(caller, 5.0f);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (calls.load() < 20 && refused.load() == 0 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // Freed while both threads call it: it waits for the running call.
  gptqModuleFree(module);
  t1.join();
  t2.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(refused.load(), 2);
  module = nullptr;
}

/// A safetensors file of one float32 tensor "w" whose data starts at a
/// 64-byte boundary, so that it is read in place from the mapping.
std::string safetensors(const std::vector<float> &w) {
  std::string header = "{\"w\":{\"dtype\":\"F32\",\"shape\":[" +
                       std::to_string(w.size()) +
                       "],\"data_offsets\":[0," +
                       std::to_string(w.size() * 4) + "]}}";
  while ((8 + header.size()) % 64)
    header += ' ';
  std::string bytes(8, '\0');
  uint64_t n = header.size();
  std::memcpy(&bytes[0], &n, 8);
  bytes += header;
  bytes.append(reinterpret_cast<const char *>(w.data()), w.size() * 4);
  return bytes;
}

TEST(CAPIArchives, AnArchiveCutShortAfterCompilingIsTheCallsError) {
  const int n = 8192; // 32 KiB: pages of the mapping past a cut
  TempFile archive("w.safetensors", safetensors(std::vector<float>(n, 2.0f)));
  std::string text = "module attributes {gptq.parameters = \"w.safetensors\"} "
                     "{\nfunc.func @f(%x: tensor<" +
                     std::to_string(n) + "xf32>) -> tensor<" +
                     std::to_string(n) + "xf32> {\n";
  text += "  %w = arith.constant dense_resource<w> : tensor<" +
          std::to_string(n) + "xf32>\n";
  text += "  %e = tensor.empty() : tensor<" + std::to_string(n) + "xf32>\n";
  text += "  %r = linalg.add ins(%x, %w : tensor<" + std::to_string(n) +
          "xf32>, tensor<" + std::to_string(n) + "xf32>) outs(%e : tensor<" +
          std::to_string(n) + "xf32>) -> tensor<" + std::to_string(n) +
          "xf32>\n  return %r : tensor<" + std::to_string(n) +
          "xf32>\n}\n}\n";
  std::string modulePath = archive.dir + "/m.mlir";
  std::ofstream(modulePath) << text;
  GptqModule *module = nullptr;
  ASSERT_EQ(take(gptqModuleOpen(modulePath.c_str(), "", &module)), "");
  std::vector<float> x(n, 1.0f);
  int64_t shape[] = {n};
  GptqBuffer args[] = {buffer(x, shape)};
  GptqArray *result = nullptr;
  size_t count = 0;
  ASSERT_EQ(take(gptqModuleCall(module, "f", args, 1, &result, 1, &count)), "");
  EXPECT_EQ(static_cast<float *>(gptqArrayBuffer(result).data)[n - 1], 3.0f);
  gptqArrayFree(result);
  // Cut short under the module (its pages would now fault): the next call
  // is an error naming the archive, and the process goes on.
  ASSERT_EQ(truncate(archive.path.c_str(), 0), 0);
  std::string message =
      take(gptqModuleCall(module, "f", args, 1, &result, 1, &count));
  EXPECT_NE(message.find(archive.path + ": the file changed while it was read"),
            std::string::npos)
      << message;
  gptqModuleFree(module);
  std::remove(modulePath.c_str());
}

TEST(CAPIMemory, AnAllocationThatFailsIsTheCallsError) {
  TempFile file("alloc.mlir", R"mlir(
func.func @filled(%n: i64) -> tensor<?xf32> {
  %i = arith.index_cast %n : i64 to index
  %one = arith.constant 1.0 : f32
  %e = tensor.empty(%i) : tensor<?xf32>
  %f = linalg.fill ins(%one : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  return %f : tensor<?xf32>
}
)mlir");
  GptqModule *module = nullptr;
  ASSERT_EQ(take(gptqModuleOpen(file.path.c_str(), "", &module)), "");
  GptqArray *result = nullptr;
  size_t count = 0;
  // 4 TiB: more than any machine this runs on can map.
  int64_t huge = int64_t(1) << 40;
  GptqBuffer args[] = {{GPTQ_INT64, 0, nullptr, &huge}};
  std::string message =
      take(gptqModuleCall(module, "filled", args, 1, &result, 1, &count));
  EXPECT_NE(message.find("@filled: out of memory allocating a buffer of "
                         "4398046511168 bytes"),
            std::string::npos)
      << message;
  EXPECT_EQ(result, nullptr);
  // The process and the module go on.
  int64_t small = 3;
  args[0].data = &small;
  ASSERT_EQ(take(gptqModuleCall(module, "filled", args, 1, &result, 1, &count)),
            "");
  EXPECT_EQ(gptqArrayBuffer(result).shape[0], 3);
  gptqArrayFree(result);
  gptqModuleFree(module);
}

/// A layer as --gptq-quantize-model rewrites it: packed codes, scales,
/// zeros and g_idx held in the file, gptq.unpack and gptq.dequantize in
/// front of the contraction; and a float weight kept in a parameter
/// archive.
const char *kRewritten = R"mlir(
module attributes {gptq.parameters = "w.npz", gptq.hf_names = {emb = "model.embed.weight"}} {
  func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %emb = arith.constant dense_resource<emb> : tensor<2x4xf32>
    %w = arith.constant dense_resource<layers.0.wq.qweight> : tensor<4x1xi32>
    %s = arith.constant dense_resource<layers.0.wq.scales> : tensor<4x2xf32>
    %z = arith.constant dense_resource<layers.0.wq.zeros> : tensor<4x2xf32>
    %g = arith.constant dense_resource<layers.0.wq.g_idx> : tensor<4xi32>
    %n = arith.constant 4 : index
    %c = gptq.unpack %w columns %n bits 4 : tensor<4x1xi32> -> tensor<4x4xi8>
    %d = gptq.dequantize %c, %s, %z, %g : tensor<4x4xi8>, tensor<4x2xf32>, tensor<4xi32> -> tensor<4x4xf32>
    %e = tensor.empty() : tensor<2x4xf32>
    %r = linalg.matmul ins(%x, %d : tensor<2x4xf32>, tensor<4x4xf32>) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
    %y = linalg.add ins(%r, %emb : tensor<2x4xf32>, tensor<2x4xf32>) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
    return %y : tensor<2x4xf32>
  }
  func.func @plain(%x: tensor<4xi32>) -> tensor<4xi32> {
    return %x : tensor<4xi32>
  }
}
{-#
  dialect_resources: {
    builtin: {
      "layers.0.wq.qweight": "0x0400000078563412010000000200000003000000",
      "layers.0.wq.scales": "0x040000000000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F",
      "layers.0.wq.zeros": "0x040000000000000000000000000000000000000000000000000000000000000000000000",
      "layers.0.wq.g_idx": "0x0400000000000000000000000100000001000000"
    }
  }
#-}
)mlir";

TEST(CAPIModel, DescribesTheRewrittenLayersAndTheirConstants) {
  TempFile file("q.mlir", kRewritten);
  GptqModule *module = nullptr;
  ASSERT_EQ(take(gptqModuleOpen(file.path.c_str(), "", &module)), "");
  const char *json = nullptr;
  ASSERT_EQ(take(gptqModuleDescribeModel(module, &json)), "");
  std::string text = json;
  auto has = [&](const std::string &part) {
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
  };
  has(R"("attributes":{"gptq.hf_names":{"emb":"model.embed.weight"},)"
      R"("gptq.parameters":"w.npz"},"parameters":["w.npz"])");
  // The constants in order; the float weight's data is in the archive.
  has(R"({"name":"forward","constants":[)"
      R"({"name":"emb","element":"f32","shape":[2,4],"inline":false},)"
      R"({"name":"layers.0.wq.qweight","element":"i32","shape":[4,1],"inline":true},)"
      R"({"name":"layers.0.wq.scales","element":"f32","shape":[4,2],"inline":true},)"
      R"({"name":"layers.0.wq.zeros","element":"f32","shape":[4,2],"inline":true},)"
      R"({"name":"layers.0.wq.g_idx","element":"i32","shape":[4],"inline":true}],)");
  // The one layer, naming its constants by their place in that list.
  has(R"("layers":[{"qweight":1,"bits":4,"out":4,"columns":4,"scales":2,)"
      R"("zeros":3,"g_idx":4}]})");
  has(R"({"name":"plain","constants":[],"layers":[]})");

  // A blob the file holds: its bytes, after the alignment word.
  const void *data = nullptr;
  size_t size = 0;
  ASSERT_EQ(
      take(gptqModuleResource(module, "layers.0.wq.qweight", &data, &size)),
      "");
  ASSERT_EQ(size, 16u);
  const int32_t *words = static_cast<const int32_t *>(data);
  EXPECT_EQ(words[0], 0x12345678);
  EXPECT_EQ(words[3], 3);
  EXPECT_EQ(take(gptqModuleResource(module, "emb", &data, &size)),
            file.path + ": no data for resource 'emb'");
  EXPECT_EQ(take(gptqModuleResource(module, nullptr, &data, &size)),
            "gptqModuleResource: a null argument");
  gptqModuleFree(module);
  EXPECT_EQ(take(gptqModuleDescribeModel(module, &json)),
            "gptqModuleDescribeModel: not an open module (a null handle, one "
            "already freed, or one being freed by another thread)");
}

TEST(CAPIModel, AParametersAttributeThatNamesNoArchiveIsSaidSo) {
  TempFile file("p.mlir", "module attributes {gptq.parameters = []} {}\n");
  GptqModule *module = nullptr;
  ASSERT_EQ(take(gptqModuleOpen(file.path.c_str(), "", &module)), "");
  const char *json = nullptr;
  ASSERT_EQ(take(gptqModuleDescribeModel(module, &json)), "");
  EXPECT_NE(std::string(json).find(
                R"("parameters":{"error":"the gptq.parameters attribute must )"
                R"(be a string naming the parameter archive, or an array of )"
                R"(such strings, found []"},"functions":[])"),
            std::string::npos)
      << json;
  gptqModuleFree(module);
}

} // namespace
