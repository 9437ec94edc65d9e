//===- RuntimeChecksTest.cpp - Failed run-time checks reach the caller ----===//

#include "gptq/Execution/Jit.h"
#include "gptq/Runtime/Checks.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::gptq;

namespace {
void returns(void **) {}

void fails(void **args) {
  gptq_runtime_check_failed(static_cast<const char *>(args[0]), 0);
}

/// Calls `fails` through a nested checked call, then fails itself.
void failsAfterANestedFailure(void **args) {
  const char *inner = gptq_runtime_call_checked(fails, args);
  args[1] = const_cast<char *>(inner);
  gptq_runtime_check_failed("outer", 0);
}

TEST(RuntimeChecksTest, ReturnsNullWhenNoCheckFails) {
  EXPECT_EQ(gptq_runtime_call_checked(returns, nullptr), nullptr);
}

TEST(RuntimeChecksTest, ReturnsTheMessageOfTheFailedCheck) {
  void *args[] = {const_cast<char *>("m.mlir:1:2: gptq.permute: bad")};
  const char *message = gptq_runtime_call_checked(fails, args);
  ASSERT_NE(message, nullptr);
  EXPECT_STREQ(message, "m.mlir:1:2: gptq.permute: bad");
}

TEST(RuntimeChecksTest, NestedCallsReturnToTheInnermost) {
  void *args[] = {const_cast<char *>("inner"), nullptr};
  const char *message =
      gptq_runtime_call_checked(failsAfterANestedFailure, args);
  ASSERT_NE(message, nullptr);
  EXPECT_STREQ(message, "outer");
  ASSERT_NE(args[1], nullptr);
  EXPECT_STREQ(static_cast<const char *>(args[1]), "inner");
  // The contexts are gone: a later call starts afresh.
  EXPECT_EQ(gptq_runtime_call_checked(returns, nullptr), nullptr);
}

TEST(RuntimeChecksDeathTest, ExitsWithStatus1OutsideACheckedCall) {
  EXPECT_EXIT(gptq_runtime_check_failed("m.mlir:3:4: op: relation", 0),
              ::testing::ExitedWithCode(1),
              ": error: m.mlir:3:4: op: relation");
}

TEST(RuntimeChecksDeathTest, ExitsWithStatus1InAParallelRegion) {
  void *args[] = {nullptr};
  auto fatal = [](void **) { gptq_runtime_check_failed("parallel", 1); };
  EXPECT_EXIT(gptq_runtime_call_checked(fatal, args),
              ::testing::ExitedWithCode(1), ": error: parallel");
}

// Compiled code: the failed check becomes the call's error, with the op's
// location, and the function stays usable.
constexpr const char *kModule = R"mlir(
func.func @mask(%w: tensor<2x?xf32>, %h: tensor<?x?xf32>) -> tensor<2x?xf32> {
  %m = gptq.mask_dead_inputs %w, %h : tensor<2x?xf32>, tensor<?x?xf32>
  return %m : tensor<2x?xf32>
}
)mlir";

class CompiledChecksTest : public ::testing::TestWithParam<bool> {};

/// JIT-compiled code, and (with the parameter) code loaded from the cache
/// of shared libraries.
TEST_P(CompiledChecksTest, FailureIsTheCallsError) {
  DialectRegistry registry;
  registerToolDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  JitOptions options;
  llvm::SmallString<128> cacheDir;
  bool cached = GetParam();
  if (cached) {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("gptq-checks", cacheDir));
    options.cacheDir = std::string(cacheDir);
  }
  auto compile = [&] {
    ParserConfig config(&context);
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(kModule, config, "mask.mlir");
    EXPECT_TRUE(module);
    return CompiledFunction::compile(std::move(module), "mask", options);
  };
  auto fn = compile();
  ASSERT_TRUE(static_cast<bool>(fn)) << llvm::toString(fn.takeError());
  if (cached) {
    fn = compile();
    ASSERT_TRUE(static_cast<bool>(fn)) << llvm::toString(fn.takeError());
    EXPECT_TRUE((*fn)->fromCache());
    llvm::sys::fs::remove_directories(cacheDir);
  }

  NpyArray w = NpyArray::zeros(DType::F32, {2, 3});
  auto bad = (*fn)->call({w, NpyArray::zeros(DType::F32, {4, 4})});
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "mask.mlir:3:8: gptq.mask_dead_inputs: expected the weight "
            "columns to equal the hessian size");
  auto notSquare = (*fn)->call({w, NpyArray::zeros(DType::F32, {3, 4})});
  ASSERT_FALSE(static_cast<bool>(notSquare));
  EXPECT_EQ(llvm::toString(notSquare.takeError()),
            "mask.mlir:3:8: gptq.mask_dead_inputs: expected a square hessian");

  auto good = (*fn)->call({w, NpyArray::zeros(DType::F32, {3, 3})});
  ASSERT_TRUE(static_cast<bool>(good)) << llvm::toString(good.takeError());
  EXPECT_EQ((*good)[0].shape, (std::vector<int64_t>{2, 3}));
}

INSTANTIATE_TEST_SUITE_P(JitAndCache, CompiledChecksTest,
                         ::testing::Values(false, true));
} // namespace
