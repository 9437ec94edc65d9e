//===- JitTest.cpp - Compiling and calling functions on arrays ------------===//

#include "gptq/Execution/Jit.h"
#include "gptq/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::gptq;

namespace {
constexpr const char *kModule = R"mlir(
func.func @mask(%w: tensor<2x?xf32>, %h: tensor<?x?xf32>) -> tensor<2x?xf32> {
  %m = gptq.mask_dead_inputs %w, %h : tensor<2x?xf32>, tensor<?x?xf32>
  return %m : tensor<2x?xf32>
}
func.func @unpack(%p: tensor<1x1xi32>, %n: index) -> tensor<1x?xi8> {
  %c = gptq.unpack %p columns %n bits 4 : tensor<1x1xi32> -> tensor<1x?xi8>
  return %c : tensor<1x?xi8>
}
func.func @twice(%w: tensor<2x?xf32>, %h: tensor<?x?xf32>) -> (tensor<2x?xf32>, tensor<2x?xf32>, tensor<?x2xf32>) {
  %m = gptq.mask_dead_inputs %w, %h : tensor<2x?xf32>, tensor<?x?xf32>
  %c1 = arith.constant 1 : index
  %n = tensor.dim %w, %c1 : tensor<2x?xf32>
  %e = tensor.empty(%n) : tensor<?x2xf32>
  %t = linalg.transpose ins(%m : tensor<2x?xf32>) outs(%e : tensor<?x2xf32>) permutation = [1, 0]
  return %m, %m, %t : tensor<2x?xf32>, tensor<2x?xf32>, tensor<?x2xf32>
}
func.func private @hidden(%w: tensor<2xf32>) -> tensor<2xf32> {
  %e = tensor.empty() : tensor<2xf32>
  return %e : tensor<2xf32>
}
)mlir";

/// A cache folder of a test's own, removed at its end once this process
/// has written its entries (they are linked in the background).
struct TempCache {
  explicit TempCache(llvm::StringRef prefix) {
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory(prefix, dir));
    options.cacheDir = std::string(dir);
  }
  ~TempCache() {
    waitForCacheWrites();
    llvm::sys::fs::remove_directories(dir);
  }
  /// The folder's files, once written.
  std::vector<std::string> files() const {
    waitForCacheWrites();
    std::vector<std::string> paths;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
         it.increment(ec))
      paths.push_back(it->path());
    return paths;
  }
  llvm::SmallString<128> dir;
  JitOptions options;
};

class JitTest : public ::testing::Test {
protected:
  JitTest() {
    registerToolDialects(registry);
    context = std::make_unique<MLIRContext>(registry);
    context->loadAllAvailableDialects();
  }

  llvm::Expected<std::unique_ptr<CompiledFunction>>
  compile(llvm::StringRef entry, const JitOptions &options = {}) {
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(kModule, ParserConfig(context.get()));
    EXPECT_TRUE(module);
    return CompiledFunction::compile(std::move(module), entry, options);
  }

  static std::string errorOf(llvm::Error error) {
    return llvm::toString(std::move(error));
  }

  DialectRegistry registry;
  std::unique_ptr<MLIRContext> context;
};

TEST(ArgSpecTest, DescribesShapesAndScalars) {
  ArgSpec matrix{DType::F32, {4, ShapedType::kDynamic}};
  EXPECT_EQ(matrix.describe(), "float32 [4, ?]");
  ArgSpec rank0{DType::I8, {}};
  EXPECT_EQ(rank0.describe(), "int8 []");
  ArgSpec scalar{DType::I64, {}, /*scalar=*/true};
  EXPECT_EQ(scalar.describe(), "int64 scalar");
  ArgSpec vector{DType::Bool, {ShapedType::kDynamic}};
  EXPECT_EQ(vector.describe(), "bool [?]");
}

TEST_F(JitTest, SignatureBecomesArgSpecs) {
  auto fn = compile("unpack");
  ASSERT_TRUE(static_cast<bool>(fn)) << errorOf(fn.takeError());
  const std::vector<ArgSpec> &in = (*fn)->inputs();
  ASSERT_EQ(in.size(), 2u);
  EXPECT_EQ(in[0].describe(), "int32 [1, 1]");
  EXPECT_TRUE(in[1].scalar);
  EXPECT_EQ(in[1].describe(), "int64 scalar");
  ASSERT_EQ((*fn)->results().size(), 1u);
  EXPECT_EQ((*fn)->results()[0].describe(), "int8 [1, ?]");
}

TEST_F(JitTest, CallsAFunctionOnArrays) {
  auto fn = compile("mask");
  ASSERT_TRUE(static_cast<bool>(fn)) << errorOf(fn.takeError());
  NpyArray w = NpyArray::zeros(DType::F32, {2, 3});
  for (int k = 0; k < 6; ++k)
    w.as<float>()[k] = static_cast<float>(k + 1);
  NpyArray h = NpyArray::zeros(DType::F32, {3, 3});
  h.as<float>()[0] = 1; // Column 1 and 2 are dead inputs.
  auto out = (*fn)->call({w, h});
  ASSERT_TRUE(static_cast<bool>(out)) << errorOf(out.takeError());
  ASSERT_EQ(out->size(), 1u);
  const NpyArray &m = (*out)[0];
  EXPECT_EQ(m.shape, (std::vector<int64_t>{2, 3}));
  std::vector<float> values(m.as<float>(), m.as<float>() + 6);
  EXPECT_EQ(values, (std::vector<float>{1, 0, 0, 4, 0, 0}));
}

TEST_F(JitTest, LowersWithTheCallersPipeline) {
  JitOptions options;
  int built = 0;
  options.pipeline = [&](OpPassManager &pm) {
    ++built;
    buildCPUPipeline(pm, CPUPipelineOptions());
  };
  auto fn = compile("mask", options);
  ASSERT_TRUE(static_cast<bool>(fn)) << errorOf(fn.takeError());
  EXPECT_EQ(built, 1);
  NpyArray w = NpyArray::zeros(DType::F32, {2, 1});
  w.as<float>()[0] = 3;
  NpyArray h = NpyArray::zeros(DType::F32, {1, 1});
  h.as<float>()[0] = 1;
  auto out = (*fn)->call({w, h});
  ASSERT_TRUE(static_cast<bool>(out)) << errorOf(out.takeError());
  EXPECT_EQ((*out)[0].as<float>()[0], 3.0f);

  // A pipeline that stops short of LLVM is an error that names the op.
  options.pipeline = [&](OpPassManager &) { ++built; };
  fn = compile("mask", options);
  ASSERT_FALSE(static_cast<bool>(fn));
  EXPECT_EQ(built, 2);
  EXPECT_EQ(errorOf(fn.takeError()),
            "lowering left 'func.func', which does not translate to LLVM IR");
}

TEST_F(JitTest, OnlyTheEntrysPackedWrapperIsCompiled) {
  TempCache cache("gptq-jit-wrappers");
  JitOptions options = cache.options;
  auto fn = compile("mask", options);
  ASSERT_TRUE(static_cast<bool>(fn)) << errorOf(fn.takeError());
  std::string library;
  for (const std::string &path : cache.files())
    if (llvm::sys::path::extension(path) == ".so")
      library = path;
  ASSERT_FALSE(library.empty());
  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  // The wrapper that calls pass through (void **), of the C interface...
  EXPECT_NE(dlsym(handle, "_mlir__mlir_ciface_mask"), nullptr);
  // ...and none of those the ExecutionEngine writes for every other
  // function, the entry's own among them.
  EXPECT_EQ(dlsym(handle, "_mlir_mask"), nullptr);
  dlclose(handle);
}

TEST_F(JitTest, TheCacheKeysTheModuleWithItsPipeline) {
  TempCache cache("gptq-jit-keys");
  JitOptions options = cache.options;
  auto first = compile("twice", options);
  ASSERT_TRUE(static_cast<bool>(first)) << errorOf(first.takeError());
  EXPECT_FALSE((*first)->fromCache());
  // The same module and options: the code of the first, its results
  // released by the allocator that made them (which the entry records).
  auto second = compile("twice", options);
  ASSERT_TRUE(static_cast<bool>(second)) << errorOf(second.takeError());
  EXPECT_TRUE((*second)->fromCache());
  NpyArray w = NpyArray::zeros(DType::F32, {2, 3});
  NpyArray h = NpyArray::zeros(DType::F32, {3, 3});
  for (int i = 0; i < 3; ++i)
    h.as<float>()[4 * i] = 1;
  for (int i = 0; i < 6; ++i)
    w.as<float>()[i] = float(i + 1);
  for (auto *fn : {first->get(), second->get()}) {
    auto out = fn->call({w, h});
    ASSERT_TRUE(static_cast<bool>(out)) << errorOf(out.takeError());
    ASSERT_EQ(out->size(), 3u);
    EXPECT_EQ((*out)[2].as<float>()[1], 4.0f);
  }
  // The module is keyed before lowering, with the pipeline's options: other
  // options (the portable kernels, another Cholesky block) are other code.
  JitOptions portable = options;
  portable.kernels = "portable";
  auto third = compile("twice", portable);
  ASSERT_TRUE(static_cast<bool>(third)) << errorOf(third.takeError());
  EXPECT_FALSE((*third)->fromCache());
  JitOptions block = options;
  block.choleskyBlock = 64;
  auto fourth = compile("twice", block);
  ASSERT_TRUE(static_cast<bool>(fourth)) << errorOf(fourth.takeError());
  EXPECT_FALSE((*fourth)->fromCache());
  // A caller's pipeline is a function, not a text: its module is keyed once
  // lowered, so it runs every time, and the same lowered code is a hit.
  JitOptions custom = options;
  int built = 0;
  custom.pipeline = [&](OpPassManager &pm) {
    ++built;
    buildCPUPipeline(pm, CPUPipelineOptions());
  };
  auto fifth = compile("twice", custom);
  ASSERT_TRUE(static_cast<bool>(fifth)) << errorOf(fifth.takeError());
  EXPECT_FALSE((*fifth)->fromCache());
  auto sixth = compile("twice", custom);
  ASSERT_TRUE(static_cast<bool>(sixth)) << errorOf(sixth.takeError());
  EXPECT_TRUE((*sixth)->fromCache());
  EXPECT_EQ(built, 2);
}

TEST_F(JitTest, ResultsSharingABufferAreEachValid) {
  // The same tensor returned twice: each result owns valid data, and the
  // buffer behind them is released once (a second release would abort).
  auto fn = compile("twice");
  ASSERT_TRUE(static_cast<bool>(fn)) << errorOf(fn.takeError());
  NpyArray w = NpyArray::zeros(DType::F32, {2, 3});
  for (int k = 0; k < 6; ++k)
    w.as<float>()[k] = static_cast<float>(k + 1);
  NpyArray h = NpyArray::zeros(DType::F32, {3, 3});
  h.as<float>()[4] = 1; // Columns 0 and 2 are dead inputs.
  for (int repeat = 0; repeat < 2; ++repeat) {
    auto out = (*fn)->call({w, h});
    ASSERT_TRUE(static_cast<bool>(out)) << errorOf(out.takeError());
    ASSERT_EQ(out->size(), 3u);
    std::vector<float> a((*out)[0].as<float>(), (*out)[0].as<float>() + 6);
    std::vector<float> b((*out)[1].as<float>(), (*out)[1].as<float>() + 6);
    std::vector<float> t((*out)[2].as<float>(), (*out)[2].as<float>() + 6);
    EXPECT_EQ(a, (std::vector<float>{0, 2, 0, 0, 5, 0}));
    EXPECT_EQ(b, a);
    EXPECT_EQ(t, (std::vector<float>{0, 0, 2, 5, 0, 0}));
  }
}

TEST_F(JitTest, ScalarArgumentsAndUnsignedCodes) {
  auto fn = compile("unpack");
  ASSERT_TRUE(static_cast<bool>(fn)) << errorOf(fn.takeError());
  NpyArray packed = NpyArray::zeros(DType::I32, {1, 1});
  *packed.as<int32_t>() = 0x4321;
  NpyArray n = NpyArray::zeros(DType::I64, {});
  *n.as<int64_t>() = 4;
  auto out = (*fn)->call({packed, n});
  ASSERT_TRUE(static_cast<bool>(out)) << errorOf(out.takeError());
  const NpyArray &codes = (*out)[0];
  EXPECT_EQ(codes.shape, (std::vector<int64_t>{1, 4}));
  std::vector<int8_t> values(codes.as<int8_t>(), codes.as<int8_t>() + 4);
  EXPECT_EQ(values, (std::vector<int8_t>{1, 2, 3, 4}));
}

TEST_F(JitTest, RejectsBadArguments) {
  auto fn = compile("mask");
  ASSERT_TRUE(static_cast<bool>(fn)) << errorOf(fn.takeError());
  NpyArray w = NpyArray::zeros(DType::F32, {2, 3});
  NpyArray h = NpyArray::zeros(DType::F32, {3, 3});
  auto count = (*fn)->call({w});
  ASSERT_FALSE(static_cast<bool>(count));
  EXPECT_EQ(errorOf(count.takeError()), "'mask' takes 2 argument(s), 1 given");

  auto dtype =
      (*fn)->call({NpyArray::zeros(DType::F64, {2, 3}), h}, {"w.npy", "h.npy"});
  ASSERT_FALSE(static_cast<bool>(dtype));
  EXPECT_EQ(
      errorOf(dtype.takeError()),
      "argument #0 (w.npy): expected float32 [2, ?], found float64 [2, 3]");

  auto size = (*fn)->call({NpyArray::zeros(DType::F32, {3, 3}), h});
  ASSERT_FALSE(static_cast<bool>(size));
  EXPECT_EQ(errorOf(size.takeError()),
            "argument #0: expected float32 [2, ?], found float32 [3, 3]");

  // An array whose data does not match its shape.
  NpyArray emptied;
  emptied.shape = {2, 3};
  auto bytes = (*fn)->call({emptied, h});
  ASSERT_FALSE(static_cast<bool>(bytes));
  EXPECT_EQ(errorOf(bytes.takeError()),
            "argument #0: float32 [2, 3] holds 0 bytes of data, not 24");

  auto rank = (*fn)->call({w, NpyArray::zeros(DType::F32, {9})});
  ASSERT_FALSE(static_cast<bool>(rank));
  EXPECT_EQ(errorOf(rank.takeError()),
            "argument #1: expected float32 [?, ?], found float32 [9]");
}

TEST_F(JitTest, AProcessForkedWhileTheCacheIsWrittenDoesNotWaitForIt) {
  TempCache cache("gptq-jit-fork");
  JitOptions options = cache.options;
  auto fn = compile("mask", options);
  ASSERT_TRUE(static_cast<bool>(fn)) << errorOf(fn.takeError());
  // Forked as the entry's library is linked: the child has no writing
  // thread, and waits for none (a hang would end at the alarm).
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::alarm(30);
    waitForCacheWrites();
    fn->reset();
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // The parent's thread writes the entry.
  waitForCacheWrites();
  auto again = compile("mask", options);
  ASSERT_TRUE(static_cast<bool>(again)) << errorOf(again.takeError());
  EXPECT_TRUE((*again)->fromCache());
}

TEST_F(JitTest, SeveralEntriesShareOneModulesCode) {
  TempCache cache("gptq-jit-entries");
  JitOptions options = cache.options;
  auto compileBoth = [&]() {
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(kModule, ParserConfig(context.get()));
    return CompiledFunction::compileEntries(std::move(module),
                                            {"twice", "unpack"}, options);
  };
  NpyArray w = NpyArray::zeros(DType::F32, {2, 3});
  NpyArray h = NpyArray::zeros(DType::F32, {3, 3});
  for (int i = 0; i < 3; ++i)
    h.as<float>()[4 * i] = 1;
  for (int i = 0; i < 6; ++i)
    w.as<float>()[i] = float(i + 1);
  NpyArray packed = NpyArray::zeros(DType::I32, {1, 1});
  packed.as<int32_t>()[0] = 0x21;
  NpyArray columns = NpyArray::zeros(DType::I64, {});
  *columns.as<int64_t>() = 2;
  for (bool again : {false, true}) {
    auto fns = compileBoth();
    ASSERT_TRUE(static_cast<bool>(fns)) << errorOf(fns.takeError());
    ASSERT_EQ(fns->size(), 2u);
    EXPECT_EQ((*fns)[0]->results().size(), 3u);
    EXPECT_EQ((*fns)[1]->results()[0].describe(), "int8 [1, ?]");
    auto twice = (*fns)[0]->call({w, h});
    ASSERT_TRUE(static_cast<bool>(twice)) << errorOf(twice.takeError());
    EXPECT_EQ((*twice)[2].as<float>()[1], 4.0f);
    auto codes = (*fns)[1]->call({packed, columns});
    ASSERT_TRUE(static_cast<bool>(codes)) << errorOf(codes.takeError());
    EXPECT_EQ((*codes)[0].as<int8_t>()[0], 1);
    EXPECT_EQ((*codes)[0].as<int8_t>()[1], 2);
    for (auto &fn : *fns)
      EXPECT_EQ(fn->fromCache(), again);
    // One cache entry for both.
    EXPECT_EQ(cache.files().size(), 1u);
  }

  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(kModule, ParserConfig(context.get()));
  auto same =
      CompiledFunction::compileEntries(module->clone(), {"mask", "mask"}, {});
  ASSERT_FALSE(static_cast<bool>(same));
  EXPECT_EQ(errorOf(same.takeError()), "entry 'mask' given twice");
  auto none = CompiledFunction::compileEntries(module->clone(), {}, {});
  ASSERT_FALSE(static_cast<bool>(none));
  EXPECT_EQ(errorOf(none.takeError()), "no entry to compile");
  auto hidden =
      CompiledFunction::compileEntries(module->clone(), {"mask", "hidden"}, {});
  ASSERT_FALSE(static_cast<bool>(hidden));
  EXPECT_EQ(errorOf(hidden.takeError()), "entry function 'hidden' is private");
  std::string object;
  JitOptions ahead;
  ahead.object = &object;
  auto objects = CompiledFunction::compileEntries(module->clone(),
                                                  {"mask", "twice"}, ahead);
  ASSERT_FALSE(static_cast<bool>(objects));
  EXPECT_EQ(errorOf(objects.takeError()),
            "an object file holds the code of one entry, not 2");
}

TEST_F(JitTest, RejectsBadEntries) {
  auto missing = compile("nope");
  ASSERT_FALSE(static_cast<bool>(missing));
  EXPECT_EQ(errorOf(missing.takeError()),
            "no function 'nope' in the module (functions: mask, unpack, "
            "twice, hidden)");
  auto hidden = compile("hidden");
  ASSERT_FALSE(static_cast<bool>(hidden));
  EXPECT_EQ(errorOf(hidden.takeError()), "entry function 'hidden' is private");
}

/// A module whose entry multiplies by a 32x16 weight written twice (one
/// dense attribute), returns a dense_resource of two floats and uses a
/// small constant and a large splat, which stay in the code. `scale`
/// scales the weight: W[i][j] = scale * (i - j).
std::string weightsModule(float scale) {
  std::string weight = "dense<[";
  for (int i = 0; i < 32; ++i) {
    weight += i ? ", [" : "[";
    for (int j = 0; j < 16; ++j)
      weight += (j ? ", " : "") + std::to_string(scale * float(i - j));
    weight += "]";
  }
  weight += "]> : tensor<32x16xf32>";
  return R"mlir(
func.func @f(%x: tensor<16xf32>) -> (tensor<32xf32>, tensor<32xf32>, tensor<2xf32>) {
  %w1 = arith.constant )mlir" +
         weight + R"mlir(
  %w2 = arith.constant )mlir" +
         weight + R"mlir(
  %small = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %r = arith.constant dense_resource<pair> : tensor<2xf32>
  %z = arith.constant dense<0.0> : tensor<32xf32>
  %one = arith.constant dense<1.0> : tensor<32x16xf32>
  %a = linalg.matvec ins(%w1, %x : tensor<32x16xf32>, tensor<16xf32>) outs(%z : tensor<32xf32>) -> tensor<32xf32>
  %b0 = linalg.matvec ins(%w2, %x : tensor<32x16xf32>, tensor<16xf32>) outs(%z : tensor<32xf32>) -> tensor<32xf32>
  %b = linalg.matvec ins(%one, %x : tensor<32x16xf32>, tensor<16xf32>) outs(%b0 : tensor<32xf32>) -> tensor<32xf32>
  %s = arith.addf %r, %small : tensor<2xf32>
  return %a, %b, %s : tensor<32xf32>, tensor<32xf32>, tensor<2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      pair: "0x040000000000803F00000040"
    }
  }
#-}
)mlir";
}

class JitWeightsTest : public JitTest {
protected:
  llvm::Expected<std::unique_ptr<CompiledFunction>>
  compileWeights(float scale, const JitOptions &options) {
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
        weightsModule(scale), ParserConfig(context.get()));
    EXPECT_TRUE(module);
    return CompiledFunction::compile(std::move(module), "f", options);
  }
  /// Calls `fn` on x[j] = j + 1 and checks its results for weights scaled
  /// by `scale`.
  void expectResults(const CompiledFunction &fn, float scale) {
    NpyArray x = NpyArray::zeros(DType::F32, {16});
    for (int j = 0; j < 16; ++j)
      x.as<float>()[j] = float(j + 1);
    auto out = fn.call({x});
    ASSERT_TRUE(static_cast<bool>(out)) << errorOf(out.takeError());
    ASSERT_EQ(out->size(), 3u);
    for (int i = 0; i < 32; ++i) {
      float dot = 0, sum = 0;
      for (int j = 0; j < 16; ++j) {
        dot += scale * float(i - j) * float(j + 1);
        sum += float(j + 1);
      }
      EXPECT_FLOAT_EQ((*out)[0].as<float>()[i], dot) << i;
      EXPECT_FLOAT_EQ((*out)[1].as<float>()[i], dot + sum) << i;
    }
    EXPECT_EQ((*out)[2].as<float>()[0], 2.0f);
    EXPECT_EQ((*out)[2].as<float>()[1], 4.0f);
  }
};

TEST_F(JitWeightsTest, WeightsBecomeArgumentsPassedInPlace) {
  auto fn = compileWeights(0.5f, JitOptions());
  ASSERT_TRUE(static_cast<bool>(fn)) << errorOf(fn.takeError());
  // The two writings of the weight share one argument; the resource is the
  // other. The small constant and the splat stay in the code.
  EXPECT_EQ((*fn)->numHoistedWeights(), 2u);
  EXPECT_EQ((*fn)->inputs().size(), 1u);
  expectResults(**fn, 0.5f);
  expectResults(**fn, 0.5f);

  JitOptions inline_;
  inline_.hoistWeights = false;
  auto kept = compileWeights(0.5f, inline_);
  ASSERT_TRUE(static_cast<bool>(kept)) << errorOf(kept.takeError());
  EXPECT_EQ((*kept)->numHoistedWeights(), 0u);
  expectResults(**kept, 0.5f);
}

TEST_F(JitWeightsTest, OtherWeightsReuseTheCachedCode) {
  TempCache cache("gptq-jit-weights");
  JitOptions options = cache.options;
  auto first = compileWeights(0.5f, options);
  ASSERT_TRUE(static_cast<bool>(first)) << errorOf(first.takeError());
  EXPECT_FALSE((*first)->fromCache());
  auto second = compileWeights(-2.0f, options);
  ASSERT_TRUE(static_cast<bool>(second)) << errorOf(second.takeError());
  EXPECT_TRUE((*second)->fromCache());
  expectResults(**first, 0.5f);
  expectResults(**second, -2.0f);

  // Weights compiled into the code are part of its cache key.
  options.hoistWeights = false;
  auto third = compileWeights(0.5f, options);
  ASSERT_TRUE(static_cast<bool>(third)) << errorOf(third.takeError());
  EXPECT_FALSE((*third)->fromCache());
  auto fourth = compileWeights(-2.0f, options);
  ASSERT_TRUE(static_cast<bool>(fourth)) << errorOf(fourth.takeError());
  EXPECT_FALSE((*fourth)->fromCache());
  expectResults(**fourth, -2.0f);
}
} // namespace
