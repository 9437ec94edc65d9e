//===- CompileJobsTest.cpp - Compiling several modules at once ------------===//

#include "gptq/Execution/CompileJobs.h"
#include "gptq/Execution/Jit.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <atomic>
#include <set>
#include <string>

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::gptq;

namespace {
llvm::Error fail(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

TEST(CompileJobsTest, CompilesEachJobInItsThreadsContext) {
  // Two functions that differ by a constant: each job's code computes its
  // own, whichever thread compiled it.
  std::vector<std::unique_ptr<CompiledFunction>> compiled(4);
  std::vector<MLIRContext *> used(4);
  std::vector<CompileJob> jobs;
  for (int i = 0; i < 4; ++i)
    jobs.push_back([&, i](MLIRContext &context) -> llvm::Error {
      used[i] = &context;
      std::string source =
          "func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
          "  %c = arith.constant dense<" +
          std::to_string(i) +
          ".0> : tensor<2xf32>\n"
          "  %y = arith.addf %x, %c : tensor<2xf32>\n"
          "  return %y : tensor<2xf32>\n"
          "}\n";
      auto fn = CompiledFunction::compileSource(context, source, "job", "f",
                                                JitOptions());
      if (!fn)
        return fn.takeError();
      compiled[i] = std::move(*fn);
      return llvm::Error::success();
    });
  std::vector<std::shared_ptr<MLIRContext>> contexts;
  llvm::Error err = runCompileJobs(jobs, contexts, /*threads=*/2);
  ASSERT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
  // One context per thread, each job's among them.
  ASSERT_EQ(contexts.size(), 2u);
  std::set<MLIRContext *> owned;
  for (auto &context : contexts)
    owned.insert(context.get());
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(owned.count(used[i])) << i;
    NpyArray x = NpyArray::zeros(DType::F32, {2});
    x.as<float>()[1] = 10;
    auto out = compiled[i]->call({x});
    ASSERT_TRUE(static_cast<bool>(out)) << llvm::toString(out.takeError());
    EXPECT_EQ((*out)[0].as<float>()[0], float(i));
    EXPECT_EQ((*out)[0].as<float>()[1], float(10 + i));
  }
}

TEST(CompileJobsTest, EveryJobRunsAndTheFirstErrorIsReported) {
  std::atomic<int> ran{0};
  std::vector<CompileJob> jobs;
  for (int i = 0; i < 5; ++i)
    jobs.push_back([&, i](MLIRContext &) -> llvm::Error {
      ++ran;
      if (i == 1 || i == 3)
        return fail("job " + std::to_string(i) + " failed");
      return llvm::Error::success();
    });
  std::vector<std::shared_ptr<MLIRContext>> contexts;
  llvm::Error err = runCompileJobs(jobs, contexts, /*threads=*/3);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(llvm::toString(std::move(err)), "job 1 failed");
  EXPECT_EQ(ran.load(), 5);
  EXPECT_EQ(contexts.size(), 3u);

  // No jobs: nothing runs, no context is made.
  contexts.clear();
  EXPECT_FALSE(static_cast<bool>(runCompileJobs({}, contexts)));
  EXPECT_TRUE(contexts.empty());
}
/// A module whose function @f adds `i` through a private @helper of its
/// own (the same name in every source), padded by `pad` unused constants so
/// that the sources differ in size.
std::string helperSource(int i, int pad) {
  std::string source = "func.func private @helper(%x: tensor<2xf32>) -> "
                       "tensor<2xf32> {\n"
                       "  %c = arith.constant dense<" +
                       std::to_string(i) +
                       ".0> : tensor<2xf32>\n"
                       "  %y = arith.addf %x, %c : tensor<2xf32>\n"
                       "  return %y : tensor<2xf32>\n"
                       "}\n"
                       "func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n";
  for (int k = 0; k < pad; ++k)
    source += "  %p" + std::to_string(k) + " = arith.constant " +
              std::to_string(k) + " : i32\n";
  return source + "  %y = func.call @helper(%x) : (tensor<2xf32>) -> "
                  "tensor<2xf32>\n"
                  "  return %y : tensor<2xf32>\n"
                  "}\n";
}

size_t cachedLibraries(llvm::StringRef dir) {
  size_t count = 0;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    count += llvm::sys::path::extension(it->path()) == ".so";
  return count;
}

TEST(CompileJobsTest, GroupedJobsCompileTheSourcesInFewerModules) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("gptq-grouped", dir));
  JitOptions options;
  options.cacheDir = std::string(dir);
  std::vector<std::string> sources;
  for (int i = 0; i < 5; ++i)
    sources.push_back(helperSource(i, 3 * i));
  for (bool again : {false, true}) {
    std::vector<std::shared_ptr<CompiledFunction>> functions;
    std::vector<CompileJob> jobs = groupedCompileJobs(
        sources, "grouped", "f", options, /*groups=*/2, functions);
    ASSERT_EQ(jobs.size(), 2u);
    std::vector<std::shared_ptr<MLIRContext>> contexts;
    llvm::Error err = runCompileJobs(jobs, contexts, /*threads=*/2);
    ASSERT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
    // Each function calls its own source's helper, though all are named
    // alike; two modules, two cache entries, which a second run loads.
    ASSERT_EQ(functions.size(), 5u);
    for (int i = 0; i < 5; ++i) {
      NpyArray x = NpyArray::zeros(DType::F32, {2});
      x.as<float>()[1] = 10;
      auto out = functions[i]->call({x});
      ASSERT_TRUE(static_cast<bool>(out)) << llvm::toString(out.takeError());
      EXPECT_EQ((*out)[0].as<float>()[0], float(i)) << i;
      EXPECT_EQ((*out)[0].as<float>()[1], float(10 + i)) << i;
      EXPECT_EQ(functions[i]->fromCache(), again) << i;
    }
    waitForCacheWrites();
    EXPECT_EQ(cachedLibraries(dir), 2u);
  }
  // More groups than sources: one each; none: one for all.
  std::vector<std::shared_ptr<CompiledFunction>> functions;
  EXPECT_EQ(
      groupedCompileJobs(sources, "grouped", "f", options, 9, functions).size(),
      5u);
  EXPECT_EQ(
      groupedCompileJobs(sources, "grouped", "f", options, 0, functions).size(),
      1u);
  waitForCacheWrites();
  llvm::sys::fs::remove_directories(dir);
}

TEST(CompileJobsTest, AGroupedSourceThatDoesNotParseIsAnInternalError) {
  std::vector<std::string> sources = {helperSource(1, 0), "func.func @f("};
  std::vector<std::shared_ptr<CompiledFunction>> functions;
  std::vector<CompileJob> jobs =
      groupedCompileJobs(sources, "grouped", "f", JitOptions(), 1, functions);
  std::vector<std::shared_ptr<MLIRContext>> contexts;
  llvm::Error err = runCompileJobs(jobs, contexts, /*threads=*/1);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(llvm::toString(std::move(err)),
            "internal error: the generated module 'grouped' does not parse");
}
} // namespace
