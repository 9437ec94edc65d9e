//===- gptq-run.cpp - Run a function of an MLIR file on .npy inputs -------===//

#include "gptq/Dialect/GPTQ/IR/GPTQ.h"
#include "gptq/Execution/Describe.h"
#include "gptq/Execution/Jit.h"
#include "gptq/Execution/Parameters.h"
#include "gptq/Runtime/LaunchCount.h"
#include "gptq/Support/Npy.h"
#include "gptq/Support/Output.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"

#include <memory>

using namespace mlir;
using namespace mlir::gptq;
namespace cl = llvm::cl;

static cl::OptionCategory category("gptq-run options");
static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<input.mlir>"),
                                      cl::cat(category));
static cl::opt<std::string>
    entry("entry",
          cl::desc("Function to call (default: main, or the module's only "
                   "entry function when it has no main: torch-mlir's "
                   "@torch_jit, an importer's @forward)"),
          cl::init("main"), cl::cat(category));
static cl::list<std::string>
    inputs("input",
           cl::desc("A .npy file for the next argument (repeat in order)"),
           cl::cat(category));
static cl::opt<std::string>
    outputDir("output-dir",
              cl::desc("Directory for the results, written as 0.npy, 1.npy, "
                       "... (created if missing; other files in it are left "
                       "alone)"),
              cl::cat(category));
static cl::opt<std::string> device(
    "device",
    cl::desc("Where to run: cpu (default); cuda: the default NVIDIA GPU "
             "(CUDA_VISIBLE_DEVICES chooses it), through "
             "gptq-lower-to-nvvm-pipeline for its architecture (without a "
             "usable GPU and driver, an error before anything is compiled "
             "or written); cuda-emulated: the same kernels, for sm_90, run "
             "on this machine's cores (blocks in turn, each an OpenMP team "
             "with its barrier and shared memory), for checking the GPU "
             "path without a GPU"),
    cl::init("cpu"), cl::cat(category));
static cl::opt<int64_t>
    choleskyBlock("cholesky-block",
                  cl::desc("Block size of the blocked Cholesky (default: 128 "
                           "on the CPU, 256 on a GPU)"),
                  cl::init(0), cl::cat(category));
static cl::opt<bool> timing(
    "time",
    cl::desc("Print compile and run seconds, and the GPU kernel launches "
             "per call, to stderr"),
    cl::cat(category));
static cl::opt<unsigned> repeat(
    "repeat",
    cl::desc("Call the function N times (default 1) and write the last "
             "results; with --time, every call's seconds are printed. The "
             "first call maps fresh memory; later ones reuse the runtime's "
             "buffers"),
    cl::init(1), cl::cat(category));

static cl::opt<bool> describe(
    "describe",
    cl::desc("Print the module's entry functions (argument and result dtypes "
             "and shapes) and its gptq.model attribute as one JSON object on "
             "stdout; parses the module only, compiles and runs nothing"),
    cl::cat(category));

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "gptq-run") << message << "\n";
  return 1;
}

static int run(int argc, char **argv) {
  cl::HideUnrelatedOptions({&category, &jitOptionCategory()});
  cl::ParseCommandLineOptions(
      argc, argv,
      "gptq-run: JIT-compile a function of an MLIR file (gptq, linalg on "
      "tensors, or the LLVM dialect) for the host CPU and run it on .npy "
      "inputs.\n\n"
      "  gptq-run model.mlir --entry forward --input tokens.npy "
      "--output-dir out/\n\n"
      "Arguments are tensors (or memrefs) matched to the .npy files in order;\n"
      "dtypes, ranks and static sizes are checked. Results are written as\n"
      "DIR/0.npy, DIR/1.npy, ..., all together and only when the call\n"
      "succeeded; a numbered file that this function would not rewrite (left\n"
      "by a run of a function with more results) is an error.\n\n"
      "StableHLO (JAX's) is read through IREE's input conversion (iree-opt:\n"
      "$GPTQ_IREE_OPT, the PATH or the active venv), IREE's util.func form\n"
      "as func.func (docs/frontends.md).\n\n"
      "  gptq-run model.mlir --describe\n\n"
      "prints what a caller needs to know before a run, as JSON: the entry\n"
      "functions' argument and result dtypes and shapes, and the model's\n"
      "hyper-parameters (the gptq.model module attribute).\n");

  if (describe) {
    // Nothing is compiled or written: options about running are mistakes.
    const cl::Option *runOptions[] = {
        std::addressof(inputs), &outputDir, &device,
        &choleskyBlock,         &timing,    &repeat};
    for (const cl::Option *option : runOptions)
      if (option->getNumOccurrences() > 0)
        return fail("--describe reads the module only; --" + option->ArgStr +
                    " does not apply");
  } else {
    if (llvm::Error err = checkDeviceName(device))
      return fail(llvm::toString(std::move(err)));
    if (outputDir.getNumOccurrences() == 0)
      return fail("--output-dir is required (or --describe)");
    if (llvm::Error err = checkOutputDirectory(outputDir, "--output-dir"))
      return fail(llvm::toString(std::move(err)));
    if (choleskyBlock.getNumOccurrences() > 0 && choleskyBlock < 1)
      return fail("--cholesky-block must be >= 1");
  }

  // The run's files: no result may replace the module, its parameter
  // archive or an --input.
  RunFiles files;
  if (llvm::Error err = files.addInput(inputFile, "the input module"))
    return fail(llvm::toString(std::move(err)));
  for (const std::string &path : inputs)
    if (llvm::Error err = files.addInput(path, "--input"))
      return fail(llvm::toString(std::move(err)));

  std::vector<NpyArray> args;
  std::vector<std::string> names;
  for (const std::string &path : inputs) {
    auto array = readNpy(path);
    if (!array)
      return fail(llvm::toString(array.takeError()));
    args.push_back(std::move(*array));
    names.push_back(path);
  }

  ToolInput input;
  auto parsed = input.parse(inputFile);
  if (!parsed)
    return fail(llvm::toString(parsed.takeError()));
  OwningOpRef<ModuleOp> module = std::move(*parsed);
  if (!entry.getNumOccurrences())
    entry = defaultEntryName(*module);

  if (describe) {
    auto text =
        describeModule(*module, entry.getNumOccurrences() > 0
                                    ? std::optional<llvm::StringRef>(entry)
                                    : std::nullopt);
    if (!text)
      return fail(inputFile + ": " + llvm::toString(text.takeError()));
    llvm::raw_fd_ostream &out = llvm::outs();
    out << *text;
    out.flush();
    if (out.has_error()) {
      std::string why = out.error().message();
      out.clear_error();
      return fail("cannot write to standard output: " + why);
    }
    return 0;
  }

  // Weights kept in a parameter archive beside the module (--describe
  // reads the module only).
  if (llvm::Error err = loadParameters(*module, inputFile, &files))
    return fail(llvm::toString(std::move(err)));

  JitOptions options = jitOptionsFromCommandLine("gptq-run");
  if (choleskyBlock.getNumOccurrences() > 0)
    options.choleskyBlock = choleskyBlock;
  options.device = device;
  auto fn = CompiledFunction::compile(std::move(module), entry, options);
  if (!fn)
    return fail(inputFile + ": " + llvm::toString(fn.takeError()));
  if (repeat < 1)
    return fail("--repeat must be >= 1");

  // The result files: none may be an input, and no numbered file may be
  // left beside them from a run with more results, to be mistaken for one.
  if (llvm::Error err =
          checkResultFiles(outputDir, (*fn)->results().size(), inputs, entry))
    return fail(llvm::toString(std::move(err)));
  for (size_t i = 0; i < (*fn)->results().size(); ++i)
    if (llvm::Error err =
            files.addOutput(resultPath(outputDir, i), "--output-dir"))
      return fail(llvm::toString(std::move(err)));
  std::vector<double> runSeconds;
  uint64_t launchesBefore = gptq_runtime_launches();
  auto results = callRepeatedly(
      repeat, [&] { return (*fn)->call(args, names); }, runSeconds);
  if (!results)
    return fail(llvm::toString(results.takeError()));

  if (llvm::Error err = writeResults(outputDir, *results))
    return fail(llvm::toString(std::move(err)));
  if (timing) {
    llvm::errs() << "cached " << ((*fn)->fromCache() ? "yes" : "no")
                 << "\ncompile_seconds " << (*fn)->compileSeconds()
                 << "\nrun_seconds";
    for (double s : runSeconds)
      llvm::errs() << " " << s;
    // Every call launches the same kernels (none on the CPU).
    llvm::errs() << "\nkernel_launches "
                 << (gptq_runtime_launches() - launchesBefore) / repeat << "\n";
  }
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // MLIR's parser recurses once per level of nesting: a large stack turns
  // deeply nested input into a diagnostic rather than a stack overflow.
  return runTool("gptq-run", [&] { return run(argc, argv); });
}
