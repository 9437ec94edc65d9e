//===- QuantizeLayerTest.cpp - The per-layer GPTQ procedure
//----------------===//

#include "gptq/Driver/QuantizeLayer.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>

using namespace mlir;
using namespace mlir::gptq;

namespace {
std::string errorOf(llvm::Error error) {
  return llvm::toString(std::move(error));
}

NpyArray matrix(int64_t rows, int64_t cols, std::vector<float> values = {}) {
  NpyArray a = NpyArray::zeros(DType::F32, {rows, cols});
  if (!values.empty()) {
    EXPECT_EQ(static_cast<int64_t>(values.size()), rows * cols);
    std::copy(values.begin(), values.end(), a.as<float>());
  }
  return a;
}

/// Weights of standard normal entries.
NpyArray randomWeight(int64_t rows, int64_t cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  NpyArray w = matrix(rows, cols);
  for (int64_t i = 0; i < rows * cols; ++i)
    w.as<float>()[i] = normal(rng);
  return w;
}

/// 2/n X^T X of n random inputs: a Hessian of calibration data.
NpyArray randomHessian(int64_t cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  int64_t n = 4 * cols;
  std::vector<double> x(n * cols);
  for (double &v : x)
    v = normal(rng);
  NpyArray h = matrix(cols, cols);
  for (int64_t i = 0; i < cols; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double s = 0;
      for (int64_t k = 0; k < n; ++k)
        s += x[k * cols + i] * x[k * cols + j];
      h.as<float>()[i * cols + j] = static_cast<float>(2.0 * s / n);
    }
  return h;
}

/// A diagonal Hessian: ones, but `first` at [0, 0].
NpyArray diagonalHessian(int64_t cols, float first) {
  NpyArray h = matrix(cols, cols);
  for (int64_t i = 0; i < cols; ++i)
    h.as<float>()[i * cols + i] = i == 0 ? first : 1.0f;
  return h;
}

/// Checks what a checkpoint relies on: shapes, codes within the grid, and
/// the dequantized weights equal to scale * (code - zero) through g_idx.
void expectConsistent(const LayerResult &r, int64_t rows, int64_t cols,
                      int64_t bits) {
  ASSERT_EQ(r.codes.dtype, DType::U8);
  ASSERT_EQ(r.codes.shape, (std::vector<int64_t>{rows, cols}));
  ASSERT_EQ(r.dequantized.shape, (std::vector<int64_t>{rows, cols}));
  ASSERT_EQ(r.gIdx.dtype, DType::I32);
  ASSERT_EQ(r.gIdx.shape, (std::vector<int64_t>{cols}));
  ASSERT_EQ(r.scales.shape.size(), 2u);
  ASSERT_EQ(r.scales.shape, r.zeros.shape);
  int64_t groups = r.scales.shape[1];
  EXPECT_TRUE(std::isfinite(r.loss));
  EXPECT_GE(r.loss, 0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      int32_t g = r.gIdx.as<int32_t>()[j];
      ASSERT_GE(g, 0);
      ASSERT_LT(g, groups);
      uint8_t c = r.codes.as<uint8_t>()[i * cols + j];
      ASSERT_LT(c, 1 << bits);
      float s = r.scales.as<float>()[i * groups + g];
      float z = r.zeros.as<float>()[i * groups + g];
      EXPECT_EQ(r.dequantized.as<float>()[i * cols + j], s * (c - z))
          << "at [" << i << ", " << j << "]";
    }
}

/// One quantizer with the default configuration (4 bits, one grid per
/// row, asymmetric, percdamp 0.01) serves every test, so the suite compiles
/// once and checks that one compilation serves them all.
class QuantizeLayerTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    context = new MLIRContext();
    context->loadDialect<GPTQDialect>();
    auto q = LayerQuantizer::create(ConfigAttr::getDefault(context));
    ASSERT_TRUE(static_cast<bool>(q)) << errorOf(q.takeError());
    quantizer = q->release();
  }
  static void TearDownTestSuite() {
    delete quantizer;
    delete context;
  }

  llvm::Expected<LayerResult> quantize(NpyArray w, NpyArray h) {
    warnings.clear();
    return quantizer->quantize(
        std::move(w), std::move(h), {"w", "h"},
        [&](const llvm::Twine &m) { warnings.push_back(m.str()); });
  }

  static MLIRContext *context;
  static LayerQuantizer *quantizer;
  std::vector<std::string> warnings;
};
MLIRContext *QuantizeLayerTest::context = nullptr;
LayerQuantizer *QuantizeLayerTest::quantizer = nullptr;

TEST_F(QuantizeLayerTest, GoldenLayerMatchesTheReference) {
  std::string dir = GPTQ_SOURCE_DIR "/test/golden/g4_perchannel_asym/";
  auto w = readNpy(dir + "W.npy");
  auto h = readNpy(dir + "H.npy");
  auto ref = readNpy(dir + "Q_ref.npy");
  ASSERT_TRUE(w && h && ref);
  auto caseText = llvm::MemoryBuffer::getFile(dir + "case.json");
  ASSERT_TRUE(static_cast<bool>(caseText));
  auto caseJson = llvm::json::parse((*caseText)->getBuffer());
  ASSERT_TRUE(static_cast<bool>(caseJson));
  double referenceLoss = *caseJson->getAsObject()->getNumber("reference_loss");

  auto r = quantize(std::move(*w), std::move(*h));
  ASSERT_TRUE(static_cast<bool>(r)) << errorOf(r.takeError());
  expectConsistent(*r, 64, 256, 4);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(r->attempts, 1u);
  EXPECT_EQ(r->percdampUsed, 0.01);
  EXPECT_GT(r->seconds, 0);
  EXPECT_EQ(r->scales.shape, (std::vector<int64_t>{64, 1}));
  // The golden criterion (test/golden/README.md).
  int64_t n = ref->numElements(), close = 0;
  for (int64_t i = 0; i < n; ++i) {
    float q = r->dequantized.as<float>()[i], e = ref->as<float>()[i];
    close += std::fabs(q - e) <= 1e-5f * std::fabs(e) + 1e-7f;
  }
  EXPECT_GE(close, static_cast<int64_t>(std::ceil(0.999 * n)));
  EXPECT_NEAR(r->loss, referenceLoss, 1e-4 * referenceLoss);
}

TEST_F(QuantizeLayerTest, OneCompilationServesLayersOfAnyShape) {
  auto a = quantize(randomWeight(8, 16, 1), randomHessian(16, 2));
  ASSERT_TRUE(static_cast<bool>(a)) << errorOf(a.takeError());
  expectConsistent(*a, 8, 16, 4);
  auto b = quantize(randomWeight(5, 24, 3), randomHessian(24, 4));
  ASSERT_TRUE(static_cast<bool>(b)) << errorOf(b.takeError());
  expectConsistent(*b, 5, 24, 4);
  EXPECT_EQ(quantizer->compilations(), 1u);
  EXPECT_GT(quantizer->compileSeconds(), 0);
}

TEST_F(QuantizeLayerTest, IndefiniteHessianEscalatesWithAWarning) {
  // mean(diag(H)) = 0.9366: percdamp 0.01 adds 0.0094 (H stays indefinite),
  // 0.02 adds 0.0187.
  auto r = quantize(randomWeight(8, 16, 5), diagonalHessian(16, -0.015f));
  ASSERT_TRUE(static_cast<bool>(r)) << errorOf(r.takeError());
  expectConsistent(*r, 8, 16, 4);
  EXPECT_EQ(r->attempts, 2u);
  EXPECT_EQ(r->percdampUsed, 0.02);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "h: the Hessian is not positive definite with "
                         "percdamp 0.01; retrying with 0.02");
  EXPECT_EQ(quantizer->compilations(), 1u);
}

TEST_F(QuantizeLayerTest, EscalationStopsBeforePercdampOne) {
  // mean(diag(H)) = 0.3125: no dampening below 1 covers -10.
  auto r = quantize(randomWeight(4, 16, 6), diagonalHessian(16, -10.0f));
  ASSERT_FALSE(static_cast<bool>(r));
  EXPECT_EQ(errorOf(r.takeError()),
            "h: the Hessian is not positive definite even with percdamp 0.99 "
            "(99 attempts; --damp-step and --max-attempts set the retries); "
            "check the calibration data");
  EXPECT_EQ(warnings.size(), 98u);
}

TEST_F(QuantizeLayerTest, BadInputsAreErrorsNamingTheInput) {
  NpyArray f64 = NpyArray::zeros(DType::F64, {4, 16});
  auto r = quantize(std::move(f64), randomHessian(16, 7));
  ASSERT_FALSE(static_cast<bool>(r));
  EXPECT_EQ(errorOf(r.takeError()), "w: expected float32, found float64");

  r = quantize(randomWeight(4, 16, 8), randomHessian(8, 9));
  ASSERT_FALSE(static_cast<bool>(r));
  EXPECT_EQ(errorOf(r.takeError()), "h: expected 16 x 16 to match the 16 "
                                    "columns of w, found float32 [8, 8]");

  r = quantize(randomWeight(4, 16, 10), matrix(16, 8));
  ASSERT_FALSE(static_cast<bool>(r));
  EXPECT_EQ(errorOf(r.takeError()),
            "h: expected a square matrix, found float32 [16, 8]");

  NpyArray w = randomWeight(4, 16, 11);
  w.as<float>()[1 * 16 + 2] = NAN;
  r = quantize(std::move(w), randomHessian(16, 12));
  ASSERT_FALSE(static_cast<bool>(r));
  EXPECT_EQ(errorOf(r.takeError()), "w: non-finite value nan at [1, 2]");

  r = quantize(randomWeight(4, 16, 13), diagonalHessian(16, -20.0f));
  ASSERT_FALSE(static_cast<bool>(r));
  EXPECT_EQ(errorOf(r.takeError()),
            "h: the mean of the Hessian diagonal is -0.3125, not positive: it "
            "is not a Hessian of calibration inputs, and no dampening makes "
            "it positive definite");
  EXPECT_TRUE(warnings.empty());
}

TEST_F(QuantizeLayerTest, AsymmetricHessianWarns) {
  NpyArray h = randomHessian(16, 14);
  h.as<float>()[2 * 16 + 5] += 1.0f;
  auto r = quantize(randomWeight(4, 16, 15), std::move(h));
  ASSERT_TRUE(static_cast<bool>(r)) << errorOf(r.takeError());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].rfind("h: the Hessian is not symmetric (H[2, 5] = ", 0),
            0u)
      << warnings[0];
}

TEST(LayerQuantizerOptionsTest, EscalationOptionsAreChecked) {
  MLIRContext context;
  context.loadDialect<GPTQDialect>();
  ConfigAttr config = ConfigAttr::getDefault(&context);
  LayerQuantizerOptions options;
  options.dampStep = 0;
  auto q = LayerQuantizer::create(config, options);
  ASSERT_FALSE(static_cast<bool>(q));
  EXPECT_EQ(errorOf(q.takeError()), "--damp-step must be a positive number");
  options.dampStep = NAN;
  EXPECT_EQ(errorOf(checkEscalationOptions(0.01, options)),
            "--damp-step must be a positive number");
  options.dampStep = 0.01;
  options.maxAttempts = 0;
  EXPECT_EQ(errorOf(checkEscalationOptions(0.01, options)),
            "--max-attempts must be >= 1");
  options.maxAttempts = 1;
  options.dampStep = 1e-12;
  EXPECT_EQ(errorOf(checkEscalationOptions(0.01, options)),
            "--damp-step 1e-12 is lost to float32 rounding at percdamp 0.01; "
            "use a larger step");
  options.dampStep = 0.01;
  q = LayerQuantizer::create(config, options);
  ASSERT_TRUE(static_cast<bool>(q)) << errorOf(q.takeError());
  EXPECT_EQ((*q)->percdamp(), 0.01);
  EXPECT_EQ((*q)->compilations(), 0u);
  EXPECT_FALSE((*q)->fromCache());
}
/// The width is an argument of the compiled code: quantizers of other
/// widths load the first one's code from the cache, each quantizing at its
/// own width; another group size is other code.
TEST(LayerQuantizerCacheTest, OneCompiledCodeServesEveryWidth) {
  MLIRContext context;
  context.loadDialect<GPTQDialect>();
  ConfigAttr defaults = ConfigAttr::getDefault(&context);
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("gptq-widths", dir));
  LayerQuantizerOptions options;
  options.jit.cacheDir = std::string(dir);
  struct Case {
    int64_t bits, groupSize;
    bool cached;
  };
  for (Case c : {Case{3, 8, false}, Case{2, 8, true}, Case{8, 8, true},
                 Case{3, 16, false}}) {
    ConfigAttr config =
        ConfigAttr::get(&context, c.bits, c.groupSize, false, true, false,
                        defaults.getPercdamp(), defaults.getBlockSize(), false,
                        defaults.getMseNorm(), defaults.getMseGrid(),
                        defaults.getMseMaxShrink());
    auto q = LayerQuantizer::create(config, options);
    ASSERT_TRUE(static_cast<bool>(q)) << errorOf(q.takeError());
    auto r = (*q)->quantize(randomWeight(6, 32, 5), randomHessian(32, 6),
                            {"w", "h"});
    ASSERT_TRUE(static_cast<bool>(r)) << errorOf(r.takeError());
    SCOPED_TRACE(testing::Message()
                 << c.bits << " bits, groups of " << c.groupSize);
    EXPECT_EQ((*q)->fromCache(), c.cached);
    expectConsistent(*r, 6, 32, c.bits);
    EXPECT_EQ(r->scales.shape[1], 32 / c.groupSize);
    // The width's whole range is used: some code is its largest.
    const uint8_t *codes = r->codes.as<uint8_t>();
    EXPECT_EQ(*std::max_element(codes, codes + r->codes.numElements()),
              (1 << c.bits) - 1);
  }
  waitForCacheWrites();
  llvm::sys::fs::remove_directories(dir);
}
} // namespace

/// Round to nearest, computed without the identity, is the kernel's
/// quantization with an identity Hessian bit for bit: codes, scales, zeros,
/// g_idx and the dequantized weights, for grids per row and per group (a
/// short last group), asymmetric and symmetric, min-max and MSE-searched,
/// 2 to 8 bits; rows of zeros and of signed zeros included.
TEST(RoundToNearest, EqualsTheKernelWithAnIdentityHessian) {
  MLIRContext context;
  context.loadDialect<GPTQDialect>();
  ConfigAttr defaults = ConfigAttr::getDefault(&context);
  struct Case {
    int64_t bits, groupSize;
    bool sym, mse;
  };
  for (Case c : {Case{4, -1, false, false}, Case{3, 32, false, false},
                 Case{2, 16, true, false}, Case{8, 48, false, false},
                 Case{4, -1, false, true}, Case{3, 32, true, true},
                 Case{4, 48, false, true}}) {
    ConfigAttr config = ConfigAttr::get(
        &context, c.bits, c.groupSize, c.sym, false, false,
        defaults.getPercdamp(), defaults.getBlockSize(), c.mse,
        defaults.getMseNorm(), defaults.getMseGrid(),
        defaults.getMseMaxShrink());
    int64_t rows = 24, cols = 100;
    NpyArray w = randomWeight(rows, cols, unsigned(c.bits));
    for (int64_t j = 0; j < cols; ++j) {
      w.as<float>()[j] = 0.0f;                     // a row of zeros
      w.as<float>()[cols + j] = j % 2 ? -0.0f : 0.5f; // no negative values
    }
    auto q = LayerQuantizer::create(config);
    ASSERT_TRUE(static_cast<bool>(q)) << errorOf(q.takeError());
    auto direct = (*q)->roundToNearest(w, "w");
    ASSERT_TRUE(static_cast<bool>(direct)) << errorOf(direct.takeError());
    NpyArray identity = matrix(cols, cols);
    for (int64_t i = 0; i < cols; ++i)
      identity.as<float>()[i * cols + i] = 1.0f;
    auto kernel = (*q)->quantize(NpyArray(w), std::move(identity), {"w", "h"});
    ASSERT_TRUE(static_cast<bool>(kernel)) << errorOf(kernel.takeError());
    SCOPED_TRACE(testing::Message() << c.bits << " bits, groups of "
                                    << c.groupSize << (c.sym ? ", sym" : "")
                                    << (c.mse ? ", mse" : ""));
    for (auto [name, a, b] :
         {std::tuple<const char *, NpyArray *, NpyArray *>{
              "codes", &direct->codes, &kernel->codes},
          {"scales", &direct->scales, &kernel->scales},
          {"zeros", &direct->zeros, &kernel->zeros},
          {"g_idx", &direct->gIdx, &kernel->gIdx},
          {"dequantized", &direct->dequantized, &kernel->dequantized}}) {
      EXPECT_EQ(a->dtype, b->dtype) << name;
      EXPECT_EQ(a->shape, b->shape) << name;
      EXPECT_TRUE(a->data == b->data) << name;
    }
  }
}
