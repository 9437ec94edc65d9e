//===- gptq-quantize-layer.cpp - GPTQ of one layer from .npy files --------===//
//
// Reads the weight and the Hessian, quantizes them with a LayerQuantizer
// (the checks, the compiled gptq.quantize_layer and the dampening
// escalation live there) and writes the checkpoint arrays and a report.
//
//===----------------------------------------------------------------------===//

#include "gptq/Dialect/GPTQ/IR/GPTQ.h"
#include "gptq/Execution/Jit.h"
#include "gptq/Driver/QuantizeLayer.h"
#include "gptq/Support/Npy.h"
#include "gptq/Support/Output.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;
using namespace mlir::gptq;
namespace cl = llvm::cl;
namespace fs = llvm::sys::fs;

static cl::OptionCategory category("gptq-quantize-layer options");
static cl::opt<std::string>
    weightPath("weight", cl::Required,
               cl::desc("Weights, float32 rows x cols (output x input)"),
               cl::value_desc("W.npy"), cl::cat(category));
static cl::opt<std::string>
    hessianPath("hessian", cl::Required,
                cl::desc("Hessian 2/n sum x x^T, float32 cols x cols"),
                cl::value_desc("H.npy"), cl::cat(category));
static cl::opt<std::string>
    outDir("out-dir", cl::Required,
           cl::desc("Output directory, created if missing; only the files "
                    "named below are replaced, and only on success"),
           cl::value_desc("DIR"), cl::cat(category));
static cl::opt<int64_t> bits("bits",
                             cl::desc("Bits per code, 2..8 (default 4)"),
                             cl::init(4), cl::cat(category));
static cl::opt<int64_t>
    groupSize("group-size",
              cl::desc("Columns per grid; -1 (default) for one grid per row"),
              cl::init(-1), cl::cat(category));
static cl::opt<bool> sym("sym",
                         cl::desc("Symmetric grids (default: asymmetric)"),
                         cl::cat(category));
static cl::opt<bool>
    actOrder("act-order",
             cl::desc("Quantize columns by descending Hessian diagonal"),
             cl::cat(category));
static cl::opt<bool>
    staticGroups("static-groups",
                 cl::desc("Compute every group's grid before quantizing"),
                 cl::cat(category));
static cl::opt<double> percdamp(
    "percdamp",
    cl::desc("Dampening as a fraction of mean(diag(H)), a normal float32 in "
             "(0, 1) (default 0.01)"),
    cl::init(0.01), cl::cat(category));
static cl::opt<int64_t>
    blockSize("block-size",
              cl::desc("Columns per lazy batch update (default 128)"),
              cl::init(128), cl::cat(category));
static cl::opt<bool> mse("mse",
                         cl::desc("Search shrunken grids for the least "
                                  "2.4-norm error (reference parameters)"),
                         cl::cat(category));
static cl::opt<std::string> device(
    "device",
    cl::desc("Where to run: cpu (default); cuda: the default NVIDIA GPU, "
             "through gptq-lower-to-nvvm-pipeline (without a usable GPU "
             "and driver, an error and no output); cuda-emulated: the same "
             "kernels run on this machine's cores (blocks in turn, each an "
             "OpenMP team), for checking the GPU path without a GPU"),
    cl::init("cpu"), cl::cat(category));
static cl::opt<double> dampStep(
    "damp-step",
    cl::desc("Added to percdamp for each retry when the Hessian is not "
             "positive definite (default 0.01, as GPTQModel)"),
    cl::init(0.01), cl::cat(category));
static cl::opt<unsigned>
    maxAttempts("max-attempts",
                cl::desc("Attempts at most, the first included, before a "
                         "Hessian that is not positive definite is an error "
                         "(default 100; retries also stop at percdamp 1)"),
                cl::init(100), cl::cat(category));

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "gptq-quantize-layer")
      << message << "\n";
  return 1;
}

static int run(int argc, char **argv) {
  cl::HideUnrelatedOptions({&category, &jitOptionCategory()});
  cl::ParseCommandLineOptions(
      argc, argv,
      "gptq-quantize-layer: GPTQ of one linear layer, as the reference "
      "implementation computes it.\n\n"
      "  gptq-quantize-layer --weight W.npy --hessian H.npy --out-dir DIR "
      "[--bits 4] [--group-size 128] [--act-order]\n\n"
      "Writes DIR/codes.npy (uint8, original column order), scales.npy and\n"
      "zeros.npy (float32, rows x groups), g_idx.npy (int32), "
      "dequantized.npy\n(float32) and report.json (loss, percdamp_used, "
      "seconds, compile_seconds,\nand kernel_launches with --device cuda or "
      "cuda-emulated).\nDIR is created if missing; other files "
      "in it are never touched, and the six\nfiles are replaced together, "
      "only when the whole run succeeded.\nA Hessian that is not positive "
      "definite is retried with more dampening.\n");

  if (llvm::Error err = checkDeviceName(device))
    return fail(llvm::toString(std::move(err)));
  LayerQuantizerOptions quantizerOptions;
  quantizerOptions.dampStep = dampStep;
  quantizerOptions.maxAttempts = maxAttempts;
  quantizerOptions.jit = jitOptionsFromCommandLine("gptq-quantize-layer");
  quantizerOptions.jit.device = device;
  if (llvm::Error err = checkEscalationOptions(percdamp, quantizerOptions))
    return fail(llvm::toString(std::move(err)));

  // The outputs: checked before any work, written only at the end. Files of
  // other names in the directory are never touched.
  static const char *const kOutputNames[] = {"codes.npy",       "scales.npy",
                                             "zeros.npy",       "g_idx.npy",
                                             "dequantized.npy", "report.json"};
  if (llvm::Error err = checkOutputDirectory(outDir, "--out-dir"))
    return fail(llvm::toString(std::move(err)));
  auto outputPath = [&](llvm::StringRef name) {
    llvm::SmallString<256> path(outDir);
    llvm::sys::path::append(path, name);
    return std::string(path);
  };
  // The run's files: no output may replace --weight or --hessian.
  RunFiles files;
  if (llvm::Error err = files.addInput(weightPath, "--weight"))
    return fail(llvm::toString(std::move(err)));
  if (llvm::Error err = files.addInput(hessianPath, "--hessian"))
    return fail(llvm::toString(std::move(err)));
  for (const char *name : kOutputNames)
    if (llvm::Error err = files.addOutput(outputPath(name), "--out-dir"))
      return fail(llvm::toString(std::move(err)));

  // Only the configuration lives here; the quantizer compiles in a context
  // of its own.
  MLIRContext context;
  context.loadDialect<GPTQDialect>();

  // The command line sets every key but the MSE search parameters, which
  // keep the reference's defaults.
  std::string configError;
  ConfigAttr config;
  {
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
      configError = d.str();
      return success();
    });
    ConfigAttr defaults = ConfigAttr::getDefault(&context);
    config = ConfigAttr::getChecked(
        [&] { return emitError(UnknownLoc::get(&context)); }, &context,
        int64_t(bits), int64_t(groupSize), bool(sym), bool(actOrder),
        bool(staticGroups), llvm::APFloat(double(percdamp)), int64_t(blockSize),
        bool(mse), defaults.getMseNorm(), defaults.getMseGrid(),
        defaults.getMseMaxShrink());
  }
  if (!config)
    return fail("invalid options: " + configError);

  auto created = LayerQuantizer::create(config, quantizerOptions);
  if (!created)
    return fail(llvm::toString(created.takeError()));
  LayerQuantizer &quantizer = **created;

  auto weight = readNpy(weightPath);
  if (!weight)
    return fail(llvm::toString(weight.takeError()));
  auto hessian = readNpy(hessianPath);
  if (!hessian)
    return fail(llvm::toString(hessian.takeError()));
  auto warn = [](const llvm::Twine &message) {
    llvm::WithColor::warning(llvm::errs(), "gptq-quantize-layer")
        << message.str() << "\n";
  };
  // W and H move in: the timed calls need no copy.
  auto result = quantizer.quantize(std::move(*weight), std::move(*hessian),
                                   {weightPath, hessianPath}, warn);
  if (!result)
    return fail(llvm::toString(result.takeError()));
  int64_t rows = result->codes.shape[0], cols = result->codes.shape[1];
  double loss = result->loss, damp = result->percdampUsed;
  double seconds = result->seconds;

  llvm::json::Object report{
      {"loss", loss},
      {"percdamp_used", damp},
      {"percdamp_requested", static_cast<double>(percdamp)},
      {"attempts", static_cast<int64_t>(result->attempts)},
      {"seconds", seconds},
      {"compile_seconds", quantizer.compileSeconds()},
      {"compiled_code_cached", quantizer.fromCache()},
      {"rows", rows},
      {"cols", cols},
      {"bits", static_cast<int64_t>(bits)},
      {"group_size", static_cast<int64_t>(groupSize)},
      {"sym", static_cast<bool>(sym)},
      {"act_order", static_cast<bool>(actOrder)},
      {"static_groups", static_cast<bool>(staticGroups)},
      {"block_size", static_cast<int64_t>(blockSize)},
      {"mse", static_cast<bool>(mse)},
      {"device", device.getValue()},
  };
  // The schedule's launches: what a GPU pays per kernel, counted alike on a
  // device and emulated.
  if (device.getValue() != "cpu")
    report["kernel_launches"] = static_cast<int64_t>(result->kernelLaunches);

  // Every file is written beside its final name first and renamed into
  // place once all of them are written: a failure replaces none.
  if (llvm::Error err = createOutputDirectory(outDir))
    return fail(llvm::toString(std::move(err)));
  PendingOutputs &outputs = files.outputs();
  const NpyArray *arrays[] = {&result->codes, &result->scales, &result->zeros,
                              &result->gIdx, &result->dequantized};
  for (int i = 0; i < 5; ++i)
    if (llvm::Error err =
            writeNpy(outputs, outputPath(kOutputNames[i]), *arrays[i]))
      return fail(llvm::toString(std::move(err)));
  if (llvm::Error err = outputs.add(
          outputPath("report.json"),
          llvm::formatv("{0:2}\n", llvm::json::Value(std::move(report))).str()))
    return fail(llvm::toString(std::move(err)));
  if (llvm::Error err = outputs.commit())
    return fail(llvm::toString(std::move(err)));
  llvm::errs() << "gptq-quantize-layer: " << rows << " x " << cols << ", loss "
               << formatNumber(loss) << ", percdamp " << formatNumber(damp)
               << ", " << llvm::format("%.3f", seconds) << " s (compile "
               << llvm::format("%.3f", quantizer.compileSeconds()) << " s) -> "
               << outDir << "\n";
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // As in the other tools: the work runs on a thread with a large stack.
  return runTool("gptq-quantize-layer", [&] { return run(argc, argv); });
}
