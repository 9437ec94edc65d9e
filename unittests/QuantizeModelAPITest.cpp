//===- QuantizeModelAPITest.cpp - gptq-quantize-model from C++ ------------===//
//
// createQuantizeModelPass as a pipeline uses it: calibration samples in
// memory, the report as a struct, the progress lines to a stream.
//
//===----------------------------------------------------------------------===//

#include "gptq/InitGPTQ.h"
#include "gptq/Driver/QuantizeModel.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace mlir;
using namespace mlir::gptq;

namespace {

/// One linear layer "fc", 4 x 8, of a non-uniform weight.
std::string model() {
  std::string weight;
  for (int r = 0; r < 4; ++r) {
    weight += r ? ", [" : "[";
    for (int c = 0; c < 8; ++c)
      weight += (c ? ", " : "") + std::to_string(((r * 8 + c) * 37 % 19) / 9.0 - 1.0);
    weight += "]";
  }
  return R"mlir(
func.func @forward(%x: tensor<?x8xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %w = arith.constant dense<[)mlir" +
         weight + R"mlir(]> : tensor<4x8xf32> loc("fc")
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%n) : tensor<?x4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<?x4xf32>) -> tensor<?x4xf32>
  %y = linalg.matmul indexing_maps = [
      affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>,
      affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<?x8xf32>, tensor<4x8xf32>)
      outs(%acc : tensor<?x4xf32>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}
)mlir";
}

struct QuantizeModelAPITest : ::testing::Test {
  QuantizeModelAPITest() : context(registry()) {
    std::string text = model();
    module = parseSourceString<ModuleOp>(text, ParserConfig(&context));
    for (int i = 0; i < 16 * 8; ++i)
      samples.push_back(float((i * 29) % 23) / 11.0f - 1.0f);
    options.bits = 4;
    options.calibrationBatch = 4;
    options.compileCache = "off";
  }
  static DialectRegistry registry() {
    DialectRegistry r;
    registerGPTQDialects(r);
    return r;
  }
  NpyView view(size_t bytes) const {
    return NpyView{DType::F32, {16, 8},
                   llvm::StringRef(reinterpret_cast<const char *>(samples.data()),
                                   bytes)};
  }
  /// Runs the pass with `io`, which must fail; its diagnostics, a line
  /// each.
  std::string failure(const QuantizeModelIO &io) {
    std::string messages;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
      messages += d.str() + "\n";
      return success();
    });
    PassManager pm(&context);
    pm.addPass(createQuantizeModelPass(options, io));
    EXPECT_TRUE(failed(pm.run(*module)));
    return messages;
  }
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  std::vector<float> samples;
  GPTQQuantizeModelOptions options;
};

TEST_F(QuantizeModelAPITest, CalibratesOnBuffersAndFillsTheReport) {
  ASSERT_TRUE(module);
  QuantizeModelReport report;
  std::string log;
  llvm::raw_string_ostream logStream(log);
  QuantizeModelIO io;
  io.calibration = view(samples.size() * sizeof(float));
  io.report = &report;
  io.log = &logStream;
  PassManager pm(&context);
  pm.addPass(createQuantizeModelPass(options, io));
  ASSERT_TRUE(succeeded(pm.run(*module)));

  EXPECT_EQ(report.entry, "forward");
  ASSERT_EQ(report.layers.size(), 1u);
  const QuantizedLayerReport &fc = report.layers[0];
  EXPECT_EQ(fc.name, "fc");
  EXPECT_EQ(fc.out, 4);
  EXPECT_EQ(fc.in, 8);
  EXPECT_EQ(fc.method, "gptq");
  // The reference's count: a 2-D input is one sample per call (4 calls of
  // 4 rows).
  EXPECT_EQ(fc.samples, 4);
  ASSERT_TRUE(fc.error && fc.rtnError && fc.attempts && fc.percdamp);
  EXPECT_LE(*fc.error, *fc.rtnError);
  EXPECT_EQ(*fc.attempts, 1);
  EXPECT_EQ(report.weightBytes, 4 * 8 * 4);
  EXPECT_GT(report.quantizedWeightBytes, 0);
  EXPECT_LT(report.quantizedWeightBytes, report.weightBytes);
  EXPECT_TRUE(report.escalated.empty());
  EXPECT_GT(report.peakResidentBytes, 0);
  // The progress lines went to the stream given.
  EXPECT_NE(log.find("gptq-quantize-model: quantizing 1 linear layer of "
                     "'@forward' with gptq"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("gptq-quantize-model: 1 layer in"), std::string::npos)
      << log;
  // The weight is rewritten.
  bool dequantized = false;
  module->walk([&](Operation *op) {
    dequantized |= op->getName().getStringRef() == "gptq.dequantize";
  });
  EXPECT_TRUE(dequantized);
}

TEST_F(QuantizeModelAPITest, ABufferOfTheWrongSizeIsAnError) {
  ASSERT_TRUE(module);
  QuantizeModelReport report;
  report.entry = "untouched";
  QuantizeModelIO io;
  io.calibration = view(samples.size() * sizeof(float) - 12);
  io.report = &report;
  io.log = &llvm::nulls();
  std::string messages = failure(io);
  EXPECT_NE(messages.find("gptq-quantize-model: the calibration samples: "
                          "the calibration samples' shape float32 [16, 8] "
                          "takes 512 bytes, the buffer given holds 500"),
            std::string::npos)
      << messages;
  EXPECT_EQ(report.entry, "untouched");
}

TEST_F(QuantizeModelAPITest, SamplesOfAnotherShapeNameTheBuffer) {
  ASSERT_TRUE(module);
  QuantizeModelIO io;
  io.calibration = NpyView{
      DType::F32, {8, 16},
      llvm::StringRef(reinterpret_cast<const char *>(samples.data()),
                      samples.size() * sizeof(float))};
  io.log = &llvm::nulls();
  std::string messages = failure(io);
  EXPECT_NE(messages.find("the calibration samples: found float32 [8, 16], "
                          "expected float32 samples of '@forward''s argument "
                          "'tensor<?x8xf32>'"),
            std::string::npos)
      << messages;
}

/// The typed options' defaults are the pass's: a struct made in code and
/// the pass's options parsed agree, field by field.
TEST(QuantizeModelOptionsTest, DefaultsAreThePass) {
  MLIRContext context;
  FailureOr<QuantizeModelOptions> parsed =
      QuantizeModelOptions::fromPassOptions(GPTQQuantizeModelOptions(),
                                            UnknownLoc::get(&context));
  ASSERT_TRUE(succeeded(parsed));
  QuantizeModelOptions made;
  EXPECT_EQ(parsed->method, made.method);
  EXPECT_EQ(parsed->bits, made.bits);
  EXPECT_EQ(parsed->groupSize, made.groupSize);
  EXPECT_EQ(parsed->sym, made.sym);
  EXPECT_EQ(parsed->actOrder, made.actOrder);
  EXPECT_EQ(parsed->staticGroups, made.staticGroups);
  EXPECT_EQ(parsed->percdamp, made.percdamp);
  EXPECT_EQ(parsed->blockSize, made.blockSize);
  EXPECT_EQ(parsed->mse, made.mse);
  EXPECT_EQ(parsed->dampStep, made.dampStep);
  EXPECT_EQ(parsed->maxAttempts, made.maxAttempts);
  EXPECT_EQ(parsed->classifier, made.classifier);
  EXPECT_EQ(parsed->routers, made.routers);
  EXPECT_EQ(parsed->sequential, made.sequential);
  EXPECT_EQ(parsed->experts, made.experts);
  EXPECT_EQ(parsed->calibrationBatch, made.calibrationBatch);
  EXPECT_EQ(parsed->vocab, made.vocab);
  EXPECT_EQ(parsed->minTokens, made.minTokens);
  EXPECT_EQ(parsed->activationMemory, made.activationMemory);
  EXPECT_EQ(parsed->hessianMemory, made.hessianMemory);
  EXPECT_EQ(parsed->layerErrors, made.layerErrors);
  EXPECT_EQ(parsed->format, made.format);
  EXPECT_EQ(parsed->compileCache, made.compileCache);
  EXPECT_NE(made.activationMemory, 0u);
}

/// A bad enum-like value is an error naming the option and the choices.
TEST(QuantizeModelOptionsTest, BadChoicesNameTheOption) {
  MLIRContext context;
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    message = d.str();
    return success();
  });
  GPTQQuantizeModelOptions pass;
  pass.format = "int4";
  EXPECT_TRUE(failed(
      QuantizeModelOptions::fromPassOptions(pass, UnknownLoc::get(&context))));
  EXPECT_EQ(message, "gptq-quantize-model: format='int4': expected packed, "
                     "float or quant");
}

} // namespace
