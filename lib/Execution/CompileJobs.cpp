//===- CompileJobs.cpp - Compile several modules at once ------------------===//

#include "gptq/Execution/CompileJobs.h"

#include "gptq/Execution/Jit.h"

#include "llvm/Support/Threading.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <string>
#include <thread>

using namespace mlir;
using namespace mlir::gptq;

llvm::Error
mlir::gptq::runCompileJobs(llvm::ArrayRef<CompileJob> jobs,
                           std::vector<std::shared_ptr<MLIRContext>> &contexts,
                           unsigned threads) {
  if (jobs.empty())
    return llvm::Error::success();
  if (threads == 0)
    threads = llvm::hardware_concurrency().compute_thread_count();
  unsigned workers =
      std::max(1u, std::min<unsigned>(threads, unsigned(jobs.size())));
  std::vector<std::shared_ptr<MLIRContext>> own(workers);
  for (auto &context : own) {
    context = makeToolContext();
    // The jobs are the parallelism: no pass manager spreads a module's
    // functions over threads besides.
    if (workers > 1)
      context->disableMultithreading();
  }
  std::vector<std::optional<std::string>> errors(jobs.size());
  std::atomic<size_t> next{0};
  auto work = [&](unsigned worker) {
    for (size_t i; (i = next.fetch_add(1)) < jobs.size();)
      if (llvm::Error err = jobs[i](*own[worker]))
        errors[i] = llvm::toString(std::move(err));
  };
  std::vector<std::thread> pool;
  for (unsigned worker = 1; worker < workers; ++worker)
    pool.emplace_back(work, worker);
  work(0);
  for (std::thread &thread : pool)
    thread.join();
  contexts.insert(contexts.end(), own.begin(), own.end());
  for (std::optional<std::string> &message : errors)
    if (message)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), *message);
  return llvm::Error::success();
}
