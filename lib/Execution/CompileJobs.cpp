//===- CompileJobs.cpp - Compile several modules at once ------------------===//

#include "gptq/Execution/CompileJobs.h"

#include "gptq/Execution/Jit.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Parser/Parser.h"
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

namespace {
/// `sources`' numbers `members` parsed into `context` as one module, every
/// symbol of source i renamed `<name>_<i>`.
llvm::Expected<OwningOpRef<ModuleOp>>
mergeSources(MLIRContext &context, llvm::ArrayRef<std::string> sources,
             llvm::ArrayRef<unsigned> members, llvm::StringRef bufferName) {
  OwningOpRef<ModuleOp> merged = ModuleOp::create(UnknownLoc::get(&context));
  for (unsigned i : members) {
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
        sources[i], ParserConfig(&context), bufferName);
    if (!module)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "internal error: the generated module '" +
                                         bufferName + "' does not parse");
    SymbolTable table(*module);
    std::string suffix = "_" + std::to_string(i);
    for (Operation &op : llvm::make_early_inc_range(*module->getBody()))
      if (auto symbol = dyn_cast<SymbolOpInterface>(op))
        if (failed(table.rename(&op, (symbol.getName() + suffix).str())))
          return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                         "internal error: cannot rename '" +
                                             symbol.getName() + "' of '" +
                                             bufferName + "'");
    merged->getBody()->getOperations().splice(
        merged->getBody()->end(), module->getBody()->getOperations());
  }
  return std::move(merged);
}
} // namespace

std::vector<CompileJob> mlir::gptq::groupedCompileJobs(
    llvm::ArrayRef<std::string> sources, llvm::StringRef bufferName,
    llvm::StringRef entry, const JitOptions &options, unsigned groups,
    std::vector<std::shared_ptr<CompiledFunction>> &functions) {
  functions.assign(sources.size(), nullptr);
  groups = std::max(1u, std::min<unsigned>(groups, sources.size()));
  std::vector<unsigned> order(sources.size());
  for (unsigned i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](unsigned a, unsigned b) {
    return sources[a].size() > sources[b].size();
  });
  std::vector<std::vector<unsigned>> members(groups);
  std::vector<size_t> load(groups, 0);
  for (unsigned i : order) {
    unsigned g = std::min_element(load.begin(), load.end()) - load.begin();
    members[g].push_back(i);
    load[g] += sources[i].size();
  }
  std::vector<CompileJob> jobs;
  for (std::vector<unsigned> &group : members) {
    if (group.empty())
      continue;
    // In the sources' order, so that the same sources make the same module
    // (and hit the same cache entry) whatever the dealing.
    llvm::sort(group);
    jobs.push_back([sources, group, bufferName = bufferName.str(),
                    entry = entry.str(), &options,
                    &functions](MLIRContext &context) -> llvm::Error {
      auto module = mergeSources(context, sources, group, bufferName);
      if (!module)
        return module.takeError();
      std::vector<std::string> entries;
      for (unsigned i : group)
        entries.push_back(entry + "_" + std::to_string(i));
      auto compiled = CompiledFunction::compileEntries(std::move(*module),
                                                       entries, options);
      if (!compiled)
        return compiled.takeError();
      for (auto [i, fn] : llvm::zip_equal(group, *compiled))
        functions[i] = std::move(fn);
      return llvm::Error::success();
    });
  }
  return jobs;
}
