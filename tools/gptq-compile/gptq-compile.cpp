//===- gptq-compile.cpp - Ahead-of-time executables of MLIR functions -----===//
//
// Compiles one function of an MLIR file (gptq ops, linalg on tensors, or
// the LLVM dialect) for the host CPU with the same lowering and code
// generation as gptq-run, and links it into an executable that needs no
// MLIR or LLVM library: the function's weights are compiled in, and it runs
// on .npy files like gptq-run. The executable needs only the C library,
// the C++ runtime and the OpenMP runtime (with --portable, a copy beside
// it).
//
//===----------------------------------------------------------------------===//

#include "gptq/Codegen/GPU/Chips.h"
#include "gptq/Execution/Jit.h"
#include "gptq/Execution/Parameters.h"
#include "gptq/Pipelines/Pipelines.h"
#include "gptq/Support/Output.h"
#include "gptq/Support/Signals.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <unistd.h>

using namespace mlir;
using namespace mlir::gptq;
namespace cl = llvm::cl;

static cl::OptionCategory category("gptq-compile options");
static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<input.mlir>"),
                                      cl::cat(category));
static cl::opt<std::string>
    entry("entry",
          cl::desc("Function to compile (default: main, or the module's only "
                   "entry function when it has no main: torch-mlir's "
                   "@torch_jit, an importer's @forward)"),
          cl::init("main"), cl::cat(category));
static cl::opt<std::string> outputFile("o", cl::Required,
                                       cl::desc("The executable to write"),
                                       cl::value_desc("file"),
                                       cl::cat(category));
static cl::opt<bool> portable(
    "portable",
    cl::desc("Copy the OpenMP runtime (libomp.so.5) beside the executable "
             "and load it from there, so that the two files run on a "
             "machine without LLVM"),
    cl::init(false), cl::cat(category));
static cl::opt<std::string> device(
    "device",
    cl::desc("Where the executable runs: cpu (default); cuda: host code "
             "with the kernels of gptq-lower-to-nvvm-pipeline embedded as "
             "cubin and the CUDA runtime library linked in (it loads only "
             "libcuda.so.1, when it first launches a kernel); cuda-emulated: "
             "those kernels run on the CPU's cores with the GPU's semantics "
             "(each block an OpenMP team), for checking them without a GPU"),
    cl::init("cpu"), cl::cat(category));
static cl::opt<std::string>
    chip("chip",
         cl::desc("With --device cuda: the GPU architecture (default sm_90)"),
         cl::init("sm_90"), cl::cat(category));
static cl::opt<std::string> tensorCores(
    "tensor-cores",
    cl::desc("With --device cuda or cuda-emulated: the matrix products on "
             "tensor cores, 3xtf32 (three TF32 products per multiply, an "
             "error near FP32's; the default from sm_80 on), tf32 (one), or "
             "off (FP32 on the CUDA cores; the default before sm_80 and for "
             "emulated kernels)"),
    cl::cat(category));
static cl::opt<int64_t>
    choleskyBlock("cholesky-block",
                  cl::desc("Block size of the blocked Cholesky (default: 128 "
                           "on the CPU, 256 on a GPU)"),
                  cl::init(0), cl::cat(category));

/// Fails in one line when `chip` is not an architecture the build can
/// target, before any lowering (the pipeline's own check would fail inside
/// the lowering's output).
static llvm::Error checkChip(llvm::StringRef chip) {
  if (!llvm::Regex("^sm_[0-9]+[af]?$").match(chip))
    return llvm::createStringError("--chip '" + chip +
                                   "' is not a GPU architecture such as "
                                   "sm_90");
  llvm::SmallString<256> ptxas(gptq::defaultCudaToolkit());
  llvm::sys::path::append(ptxas, "bin", "ptxas");
  if (llvm::Error err = gptq::checkNVPTXChip(chip, ptxas))
    return llvm::createStringError("--chip " + llvm::toString(std::move(err)));
  return llvm::Error::success();
}

/// The symbol of the entry in the executable.
static constexpr const char *kEntrySymbol = "gptq_aot_entry";

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "gptq-compile") << message << "\n";
  return 1;
}

/// The C source of the table AotMain.cpp reads (see there).
static std::string tableSource(const PackedEntry &entry, llvm::StringRef name) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "/* Generated by gptq-compile: the entry '" << name << "'. */\n";
  os << "const char gptq_aot_entry_name[] = \"";
  os.write_escaped(name);
  os << "\";\n";
  os << "void _mlir__mlir_ciface_" << kEntrySymbol << "(void **);\n";
  os << "void (*const gptq_aot_function)(void **) = _mlir__mlir_ciface_"
     << kEntrySymbol << ";\n";
  os << "const int gptq_aot_runtime_allocator = "
     << (entry.runtimeAllocator ? 1 : 0) << ";\n";
  // Compiled GPU code returns CUDA managed memory.
  if (entry.freeResult)
    os << "void gptq_cuda_free_managed(void *);\n"
          "void (*const gptq_aot_free_result)(void *) = "
          "gptq_cuda_free_managed;\n";
  else
    os << "void (*const gptq_aot_free_result)(void *) = 0;\n";
  os << "const int gptq_aot_num_inputs = " << entry.inputs.size() << ";\n";
  os << "const int gptq_aot_num_results = " << entry.results.size() << ";\n";
  std::string specs, sizes;
  llvm::raw_string_ostream so(specs), zo(sizes);
  for (const auto *list : {&entry.inputs, &entry.results})
    for (const ArgSpec &s : *list) {
      so << static_cast<int>(s.dtype) << ", " << s.shape.size() << ", "
         << (s.scalar ? 1 : 0) << ", " << (s.isMemRef ? 1 : 0) << ", ";
      for (int64_t d : s.shape)
        zo << (d == kDynamicSize ? "(-9223372036854775807LL - 1)"
                                 : std::to_string(d) + "LL")
           << ", ";
    }
  // Empty arrays are not C: each list ends with a zero.
  os << "const int gptq_aot_specs[] = {" << specs << "0};\n";
  os << "const long long gptq_aot_sizes[] = {" << sizes << "0};\n";
  return text;
}

/// Links `object` and the table `table` into the executable `output`; the
/// linker's messages go to the file `log`.
static llvm::Error link(llvm::StringRef object, llvm::StringRef table,
                        llvm::StringRef output, llvm::StringRef log,
                        bool portable, bool cuda) {
  auto cc = llvm::sys::findProgramByName("cc");
  if (!cc)
    return llvm::createStringError(
        "no C compiler driver 'cc' on the PATH to link the executable");
  llvm::SmallVector<std::string> args = {*cc,
                                         "-o",
                                         output.str(),
                                         "-x",
                                         "c",
                                         table.str(),
                                         "-x",
                                         "none",
                                         object.str(),
                                         GPTQ_AOT_UKERNEL_LIBRARY};
  // The CUDA runtime library, which loads the driver at run time; before
  // the main library, whose runtime (checks, the launch counter) it calls.
  if (cuda)
    args.push_back(GPTQ_AOT_CUDA_RUNTIME_LIBRARY);
  args.push_back(GPTQ_AOT_MAIN_LIBRARY);
  args.push_back(GPTQ_LLVM_SUPPORT_LIBRARY);
  args.push_back(GPTQ_LLVM_DEMANGLE_LIBRARY);
  // The OpenMP runtime is the only shared library beyond the C and C++
  // runtimes. MLIR's C runner utilities are not linked: they need libMLIR,
  // and code that calls them fails to link here, naming the symbol.
  args.push_back(GPTQ_OPENMP_RUNTIME);
  if (portable)
    args.push_back("-Wl,-rpath,$ORIGIN");
  else
    args.push_back(
        ("-Wl,-rpath," + llvm::sys::path::parent_path(GPTQ_OPENMP_RUNTIME))
            .str());
  for (const char *lib : {"-lstdc++", "-lm", "-lpthread", "-ldl"})
    args.push_back(lib);
  llvm::SmallVector<llvm::StringRef> argRefs(args.begin(), args.end());
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, log, log};
  std::string message;
  int status = llvm::sys::ExecuteAndWait(*cc, argRefs, std::nullopt, redirects,
                                         /*SecondsToWait=*/0,
                                         /*MemoryLimit=*/0, &message);
  std::string text;
  if (auto buffer = llvm::MemoryBuffer::getFile(log))
    text = (*buffer)->getBuffer().trim().str();
  if (status != 0)
    return llvm::createStringError(
        "linking the executable failed" +
        (message.empty() ? std::string() : ": " + message) +
        (text.empty() ? std::string() : ":\n" + text));
  return llvm::Error::success();
}

static int run(int argc, char **argv) {
  cl::HideUnrelatedOptions({&category});
  cl::ParseCommandLineOptions(
      argc, argv,
      "gptq-compile: compile a function of an MLIR file ahead of time into "
      "an\nexecutable for this host CPU that runs without MLIR.\n\n"
      "  gptq-compile layer.mlir --entry main -o quantize-layer\n"
      "  ./quantize-layer --input W.npy --input H.npy --output-dir out/\n\n"
      "The lowering and code generation are gptq-run's (the CPU pipeline, "
      "O3, the\nhost's vector width); the function's weights are compiled "
      "into the\nexecutable. It reads .npy inputs in argument order "
      "(dtypes, ranks and\nstatic sizes are checked) and writes "
      "DIR/0.npy, DIR/1.npy, ..., all\ntogether and only when the call "
      "succeeded; --help lists its arguments.\nThe output file is written "
      "only when compiling and linking succeeded.\n");
  if (choleskyBlock.getNumOccurrences() > 0 && choleskyBlock < 1)
    return fail("--cholesky-block must be >= 1");
  if (llvm::Error err = checkDeviceName(device))
    return fail(llvm::toString(std::move(err)));
  if (tensorCores.getNumOccurrences() > 0) {
    if (tensorCores != "off" && tensorCores != "tf32" &&
        tensorCores != "3xtf32")
      return fail("--tensor-cores must be off, tf32 or 3xtf32, found '" +
                  tensorCores + "'");
    if (device == "cpu")
      return fail("--tensor-cores applies to --device cuda or cuda-emulated");
  }
  if (device == "cuda")
    if (llvm::Error err = checkChip(chip))
      return fail(llvm::toString(std::move(err)));
  // The run's files: the executable (and with --portable the runtime beside
  // it) must not replace the module or its parameter archive.
  RunFiles files;
  if (llvm::Error err = files.addInput(inputFile, "the input module"))
    return fail(llvm::toString(std::move(err)));
  if (llvm::Error err = files.addOutput(outputFile, "-o"))
    return fail(llvm::toString(std::move(err)));
  llvm::SmallString<256> runtime(llvm::sys::path::parent_path(outputFile));
  llvm::sys::path::append(runtime, "libomp.so.5");
  if (portable)
    if (llvm::Error err =
            files.addOutput(runtime, "the OpenMP runtime beside -o"))
      return fail(llvm::toString(std::move(err)));
  ToolInput input;
  auto parsed = input.parse(inputFile);
  if (!parsed)
    return fail(llvm::toString(parsed.takeError()));
  OwningOpRef<ModuleOp> module = std::move(*parsed);
  if (!entry.getNumOccurrences())
    entry = defaultEntryName(*module);
  if (llvm::Error err = loadParameters(*module, inputFile, &files))
    return fail(llvm::toString(std::move(err)));

  // The executable's main function is AotMain's: the entry is compiled
  // under a fixed name of its own, which no C symbol of the program uses.
  Operation *f = module->lookupSymbol(entry);
  if (!f)
    return fail(inputFile + ": no function '" + entry +
                "' in the module (functions: " +
                llvm::join(entryNames(*module), ", ") + ")");
  if (entry != kEntrySymbol) {
    if (module->lookupSymbol(kEntrySymbol))
      return fail(inputFile + ": the module already has a symbol '" +
                  kEntrySymbol + "'");
    if (failed(SymbolTable::replaceAllSymbolUses(
            f, StringAttr::get(&input.context(), kEntrySymbol), *module)))
      return fail(inputFile + ": cannot rename '" + entry + "'");
    SymbolTable::setSymbolName(f, kEntrySymbol);
  }
  if (entry != "main" && module->lookupSymbol("main"))
    return fail(inputFile +
                ": the function 'main' would clash with the "
                "executable's own main; compile it as the entry or rename "
                "it");

  JitOptions options;
  options.toolName = "gptq-compile";
  if (choleskyBlock.getNumOccurrences() > 0)
    options.choleskyBlock = choleskyBlock;
  if (tensorCores.getNumOccurrences() > 0)
    options.tensorCores = tensorCores.getValue();
  options.device = device;
  options.chip = chip;
  // The executable carries its weights: nothing passes them in.
  options.hoistWeights = false;
  std::string object;
  options.object = &object;
  auto fn = CompiledFunction::compile(std::move(module), kEntrySymbol, options);
  if (!fn)
    return fail(inputFile + ": " + llvm::toString(fn.takeError()));

  // The object, the table, the linked executable and the linker's messages
  // are temporary files (removed whatever happens, also on a signal); the
  // executable's bytes then become the output, written beside -o and renamed
  // into place (or written into a device such as /dev/null, never replacing
  // it).
  std::vector<std::string> temporaries;
  llvm::scope_exit cleanup([&] {
    for (const std::string &path : temporaries) {
      llvm::sys::fs::remove(path);
      llvm::sys::DontRemoveFileOnSignal(path);
    }
  });
  auto temporary = [&](llvm::StringRef suffix) -> llvm::Expected<std::string> {
    llvm::SmallString<256> path;
    int fd;
    // Created and registered with interrupts held back, so that none falls
    // between the two.
    DeferInterrupts creating;
    if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
            "gptq-compile", suffix, fd, path))
      return llvm::createStringError("cannot create a temporary file: " +
                                     ec.message());
    ::close(fd);
    llvm::sys::RemoveFileOnSignal(path);
    temporaries.push_back(std::string(path));
    return std::string(path);
  };
  auto objectPath = temporary("o");
  auto tablePath = temporary("c");
  auto linked = temporary("exe");
  auto logPath = temporary("log");
  for (auto *path : {&objectPath, &tablePath, &linked, &logPath})
    if (!*path)
      return fail(llvm::toString(path->takeError()));
  if (llvm::Error err = writeFileAtomically(*objectPath, object))
    return fail(llvm::toString(std::move(err)));
  if (llvm::Error err = writeFileAtomically(
          *tablePath, tableSource((*fn)->entry(), entry)))
    return fail(llvm::toString(std::move(err)));
  if (llvm::Error err = link(*objectPath, *tablePath, *linked, *logPath,
                             portable, device == "cuda"))
    return fail(llvm::toString(std::move(err)));
  auto executable = llvm::MemoryBuffer::getFile(
      *linked, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!executable)
    return fail("cannot read the linked executable: " +
                executable.getError().message());
  if (portable) {
    // The runtime first: an executable beside no runtime would not start.
    auto bytes = llvm::MemoryBuffer::getFile(GPTQ_OPENMP_RUNTIME,
                                             /*IsText=*/false,
                                             /*RequiresNullTerminator=*/false);
    if (!bytes)
      return fail("cannot read '" GPTQ_OPENMP_RUNTIME "': " +
                  bytes.getError().message());
    if (llvm::Error err = files.outputs().add(runtime, (*bytes)->getBuffer(),
                                              llvm::sys::fs::all_all))
      return fail(llvm::toString(std::move(err)));
  }
  if (llvm::Error err = files.outputs().add(
          outputFile, (*executable)->getBuffer(), llvm::sys::fs::all_all))
    return fail(llvm::toString(std::move(err)));
  if (llvm::Error err = files.commit())
    return fail(llvm::toString(std::move(err)));
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  return runTool("gptq-compile", [&] { return run(argc, argv); });
}
