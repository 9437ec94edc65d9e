//===- AotMain.cpp - The main function of ahead-of-time executables -------===//
//
// gptq-compile links this file, the calling convention (Call.cpp), .npy I/O
// and the runtime library with one compiled entry and a table that
// describes it (generated, see tools/gptq-compile), into an executable that
// needs no MLIR: it reads .npy inputs, calls the entry and writes its
// results as gptq-run does.
//
//===----------------------------------------------------------------------===//

#include "gptq/Execution/Call.h"
#include "gptq/Runtime/LaunchCount.h"
#include "gptq/Support/Npy.h"
#include "gptq/Support/Output.h"
#include "gptq/Support/Signals.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <string>
#include <vector>

// The table gptq-compile generates for the entry: its name and packed
// interface; whether its buffers come from the runtime allocator, and the
// function that frees results when it is another (compiled GPU code's
// managed memory); for each
// input, then each result, four ints (dtype, rank, scalar, memref) in
// gptq_aot_specs and the rank's sizes (kDynamicSize where dynamic) in
// gptq_aot_sizes.
extern "C" {
extern const char gptq_aot_entry_name[];
extern void (*const gptq_aot_function)(void **);
extern const int gptq_aot_runtime_allocator;
extern void (*const gptq_aot_free_result)(void *);
extern const int gptq_aot_num_inputs;
extern const int gptq_aot_num_results;
extern const int gptq_aot_specs[];
extern const long long gptq_aot_sizes[];
/// The compiled module's static constructors (compiled GPU code registers its
/// kernels there), when it has any.
void gptq_module_init() __attribute__((weak));
}

using namespace mlir::gptq;

namespace {

const char *program = "gptq-aot";

int fail(const std::string &message) {
  llvm::errs() << program << ": error: " << message << "\n";
  return 1;
}

PackedEntry tableEntry() {
  PackedEntry entry;
  entry.name = gptq_aot_entry_name;
  entry.function = gptq_aot_function;
  entry.runtimeAllocator = gptq_aot_runtime_allocator != 0;
  entry.freeResult = gptq_aot_free_result;
  const int *spec = gptq_aot_specs;
  const long long *sizes = gptq_aot_sizes;
  for (int i = 0; i < gptq_aot_num_inputs + gptq_aot_num_results; ++i) {
    ArgSpec s;
    s.dtype = static_cast<DType>(spec[0]);
    s.shape.assign(sizes, sizes + spec[1]);
    s.scalar = spec[2] != 0;
    s.isMemRef = spec[3] != 0;
    sizes += spec[1];
    spec += 4;
    (i < gptq_aot_num_inputs ? entry.inputs : entry.results).push_back(s);
  }
  return entry;
}

void usage(const PackedEntry &entry) {
  llvm::outs() << "usage: " << program
               << " [--input FILE.npy]... --output-dir DIR [--repeat N] "
                  "[--time]\n\n"
               << "Calls '" << entry.name
               << "', compiled ahead of time by gptq-compile, on .npy inputs\n"
                  "matched to its arguments in order (dtypes, ranks and "
                  "static sizes are\nchecked), and writes its results as "
                  "DIR/0.npy, DIR/1.npy, ..., all\ntogether and only when "
                  "the call succeeded.\n\n";
  llvm::outs() << "arguments:\n";
  for (const ArgSpec &s : entry.inputs)
    llvm::outs() << "  " << s.describe() << "\n";
  llvm::outs() << "results:\n";
  for (const ArgSpec &s : entry.results)
    llvm::outs() << "  " << s.describe() << "\n";
  llvm::outs() << "\n  --repeat N  call N times (default 1), write the last "
                  "results\n  --time      print run_seconds of each call "
                  "and the GPU\n              kernel_launches per call to "
                  "stderr\n";
}

} // namespace

int main(int argc, char **argv) {
  if (argc > 0) {
    llvm::StringRef name(argv[0]);
    size_t slash = name.rfind('/');
    static std::string base =
        (slash == llvm::StringRef::npos ? name : name.substr(slash + 1)).str();
    program = base.c_str();
  }
  installToolSignalHandlers(program);
  setFileThread(true);
  // No driver call: kernels load at their first launch.
  if (gptq_module_init)
    gptq_module_init();
  PackedEntry entry = tableEntry();
  std::vector<std::string> inputs;
  std::string outputDir;
  bool timing = false;
  unsigned repeat = 1;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg(argv[i]);
    auto value = [&]() -> const char * {
      return i + 1 < argc ? argv[++i] : nullptr;
    };
    if (arg == "--help" || arg == "-h") {
      usage(entry);
      return 0;
    }
    if (arg == "--time") {
      timing = true;
    } else if (arg == "--input" || arg == "--output-dir" || arg == "--repeat") {
      const char *v = value();
      if (!v)
        return fail(arg.str() + " needs a value");
      if (arg == "--input") {
        inputs.push_back(v);
      } else if (arg == "--output-dir") {
        outputDir = v;
      } else if (llvm::StringRef(v).getAsInteger(10, repeat) || repeat < 1) {
        return fail("--repeat must be an integer >= 1, not '" + std::string(v) +
                    "'");
      }
    } else {
      return fail("unknown argument '" + arg.str() + "' (see --help)");
    }
  }
  if (outputDir.empty())
    return fail("--output-dir is required (see --help)");
  if (llvm::Error err = checkOutputDirectory(outputDir, "--output-dir"))
    return fail(llvm::toString(std::move(err)));
  std::vector<NpyArray> args;
  for (const std::string &path : inputs) {
    auto array = readNpy(path);
    if (!array)
      return fail(llvm::toString(array.takeError()));
    args.push_back(std::move(*array));
  }
  if (llvm::Error err =
          checkResultFiles(outputDir, entry.results.size(), inputs, entry.name))
    return fail(llvm::toString(std::move(err)));
  std::vector<double> seconds;
  uint64_t launchesBefore = gptq_runtime_launches();
  auto results = callRepeatedly(
      repeat, [&] { return callPackedEntry(entry, {}, args, inputs); },
      seconds);
  if (!results)
    return fail(llvm::toString(results.takeError()));
  if (llvm::Error err = writeResults(outputDir, *results))
    return fail(llvm::toString(std::move(err)));
  if (timing) {
    llvm::errs() << "run_seconds";
    for (double s : seconds)
      llvm::errs() << " " << s;
    llvm::errs() << "\n";
    // Every call launches the same kernels (none on the CPU).
    llvm::errs() << "kernel_launches "
                 << (gptq_runtime_launches() - launchesBefore) / repeat << "\n";
  }
  return 0;
}
