//===- gptq-quantize-layer.cpp - GPTQ of one layer from .npy files --------===//
//
// Builds a module around gptq.quantize_layer, compiles it once through the
// CPU pipeline (shapes are dynamic, so the compiled code serves any layer of
// the same configuration), runs it, escalates the dampening when the
// Hessian cannot be factorized, and writes the checkpoint arrays.
//
//===----------------------------------------------------------------------===//

#include "gptq/Dialect/GPTQ/IR/GPTQ.h"
#include "gptq/Execution/Jit.h"
#include "gptq/Execution/Npy.h"
#include "gptq/Execution/Output.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/WithColor.h"

#include <chrono>
#include <cmath>

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
static cl::opt<std::string> device("device",
                                   cl::desc("Where to run: cpu (default)"),
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

/// A number as printf's %g writes it (0.03, 1e-12).
static std::string number(double value) {
  return llvm::formatv("{0}", llvm::format("%g", value)).str();
}

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "gptq-quantize-layer")
      << message << "\n";
  return 1;
}

/// The position of the first NaN or infinity of a float32 array, as
/// "nan at [i, j]".
static std::optional<std::string> findNonFinite(const NpyArray &a) {
  const float *v = a.as<float>();
  for (int64_t i = 0, n = a.numElements(); i < n; ++i) {
    if (std::isfinite(v[i]))
      continue;
    std::string where;
    for (size_t d = a.shape.size(), rest = i; d-- > 0;) {
      where = std::to_string(rest % a.shape[d]) + (where.empty() ? "" : ", ") +
              where;
      rest /= a.shape[d];
    }
    return (std::isnan(v[i]) ? "nan"
            : v[i] > 0       ? "inf"
                             : "-inf") +
           std::string(" at [") + where + "]";
  }
  return std::nullopt;
}

/// Checks dtype, rank and finiteness; names the first bad entry.
static llvm::Error checkMatrix(const NpyArray &a, llvm::StringRef path) {
  auto error = [&](const llvm::Twine &m) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": " + m);
  };
  if (a.dtype != DType::F32)
    return error("expected float32, found " + dtypeName(a.dtype));
  if (a.shape.size() != 2)
    return error("expected a matrix (rank 2), found shape " + a.describe());
  if (a.shape[0] == 0 || a.shape[1] == 0)
    return error("expected a non-empty matrix, found " + a.describe());
  if (std::optional<std::string> bad = findNonFinite(a))
    return error("non-finite value " + *bad);
  return llvm::Error::success();
}

static std::string configText(ConfigAttr config) {
  std::string s;
  llvm::raw_string_ostream os(s);
  Attribute(config).print(os);
  return s;
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
      "seconds, compile_seconds).\nDIR is created if missing; other files "
      "in it are never touched, and the six\nfiles are replaced together, "
      "only when the whole run succeeded.\nA Hessian that is not positive "
      "definite is retried with more dampening.\n");

  if (device != "cpu")
    return fail(device == "cuda"
                    ? llvm::Twine("--device cuda is not available in this "
                                  "build; use --device cpu")
                    : "unknown --device '" + device +
                          "' (expected cpu or cuda)");
  if (!(dampStep > 0) || !std::isfinite(dampStep))
    return fail("--damp-step must be a positive number");
  if (maxAttempts < 1)
    return fail("--max-attempts must be >= 1");
  // The compiled code computes in float32: a step lost to rounding would
  // retry with the same dampening.
  if (!(static_cast<float>(percdamp + dampStep) > static_cast<float>(percdamp)))
    return fail("--damp-step " + number(dampStep) +
                " is lost to float32 rounding at percdamp " + number(percdamp) +
                "; use a larger step");

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
  for (const char *name : kOutputNames)
    if (llvm::Error err = checkNotAnInput(
            outputPath(name), {weightPath.getValue(), hessianPath.getValue()}))
      return fail(llvm::toString(std::move(err)) + " (--out-dir)");

  DialectRegistry registry;
  registerToolDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

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

  auto weight = readNpy(weightPath);
  if (!weight)
    return fail(llvm::toString(weight.takeError()));
  auto hessian = readNpy(hessianPath);
  if (!hessian)
    return fail(llvm::toString(hessian.takeError()));
  if (llvm::Error err = checkMatrix(*weight, weightPath))
    return fail(llvm::toString(std::move(err)));
  if (llvm::Error err = checkMatrix(*hessian, hessianPath))
    return fail(llvm::toString(std::move(err)));
  int64_t rows = weight->shape[0], cols = weight->shape[1];
  if (hessian->shape[0] != hessian->shape[1])
    return fail(hessianPath + ": expected a square matrix, found " +
                hessian->describe());
  if (hessian->shape[0] != cols)
    return fail(hessianPath + ": expected " + llvm::Twine(cols) + " x " +
                llvm::Twine(cols) + " to match the " + llvm::Twine(cols) +
                " columns of " + weightPath + ", found " + hessian->describe());

  // Dampening adds percdamp * mean(diag(H)) (dead inputs counting as 1): it
  // cannot help when that mean is not positive.
  {
    const float *h = hessian->as<float>();
    double sum = 0;
    for (int64_t i = 0; i < cols; ++i)
      sum += h[i * cols + i] == 0.0f ? 1.0 : h[i * cols + i];
    if (!(sum > 0))
      return fail(hessianPath + ": the mean of the Hessian diagonal is " +
                  number(sum / cols) +
                  ", not positive: it is not a Hessian of calibration "
                  "inputs, and no dampening makes it positive definite");
  }

  // The factorization reads the upper triangle of H, the reference's
  // torch.linalg.cholesky the lower: they agree on symmetric Hessians (as
  // 2/n X^T X is, up to rounding), and only on those.
  {
    const float *h = hessian->as<float>();
    float largest = 0, worst = 0;
    int64_t wi = 0, wj = 0;
    for (int64_t i = 0; i < cols * cols; ++i)
      largest = std::max(largest, std::fabs(h[i]));
    for (int64_t i = 0; i < cols; ++i)
      for (int64_t j = i + 1; j < cols; ++j)
        if (float d = std::fabs(h[i * cols + j] - h[j * cols + i]); d > worst) {
          worst = d;
          wi = i;
          wj = j;
        }
    if (worst > 1e-5f * largest)
      llvm::WithColor::warning(llvm::errs(), "gptq-quantize-layer")
          << hessianPath << ": the Hessian is not symmetric (H[" << wi << ", "
          << wj << "] = " << number(h[wi * cols + wj]) << " but H[" << wj
          << ", " << wi << "] = " << number(h[wj * cols + wi])
          << "); its upper triangle is used, where the reference uses the "
             "lower: symmetrize it, e.g. (H + H^T) / 2\n";
  }

  // The dampening is an argument, so escalating it reuses the compiled code.
  std::string source =
      "func.func @quantize(%w: tensor<?x?xf32>, %h: tensor<?x?xf32>, "
      "%p: tensor<f32>) -> (tensor<?x?xi8>, tensor<?x?xf32>, "
      "tensor<?x?xf32>, tensor<?xi32>, tensor<?x?xf32>, tensor<f32>, "
      "tensor<i1>) {\n"
      "  %damp = tensor.extract %p[] : tensor<f32>\n"
      "  %c, %s, %z, %g, %loss, %ok = gptq.quantize_layer %w, %h "
      "percdamp(%damp) {config = " +
      configText(config) +
      "} : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, "
      "tensor<?x?xf32>, tensor<?xi32>\n"
      "  %q = gptq.dequantize %c, %s, %z, %g : tensor<?x?xi8>, "
      "tensor<?x?xf32>, tensor<?xi32> -> tensor<?x?xf32>\n"
      "  %lt = tensor.from_elements %loss : tensor<f32>\n"
      "  %okt = tensor.from_elements %ok : tensor<i1>\n"
      "  return %c, %s, %z, %g, %q, %lt, %okt : tensor<?x?xi8>, "
      "tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>, tensor<?x?xf32>, "
      "tensor<f32>, tensor<i1>\n"
      "}\n";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
      source, ParserConfig(&context), "gptq-quantize-layer");
  if (!module)
    return fail("internal error: the generated module does not parse");
  JitOptions jitOptions = jitOptionsFromCommandLine("gptq-quantize-layer");
  auto fn =
      CompiledFunction::compile(std::move(module), "quantize", jitOptions);
  if (!fn)
    return fail(llvm::toString(fn.takeError()));

  double damp = percdamp;
  unsigned attempts = 0;
  double seconds = 0;
  std::vector<NpyArray> results;
  // The arguments are built once, outside the timing: W and H move in.
  std::vector<NpyArray> args;
  args.push_back(std::move(*weight));
  args.push_back(std::move(*hessian));
  args.push_back(NpyArray::zeros(DType::F32, {}));
  const std::vector<std::string> argNames = {weightPath, hessianPath,
                                             "percdamp"};
  while (true) {
    ++attempts;
    *args[2].as<float>() = static_cast<float>(damp);
    auto start = std::chrono::steady_clock::now();
    auto out = (*fn)->call(args, argNames);
    seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (!out)
      return fail(llvm::toString(out.takeError()));
    if (*(*out)[6].as<bool>()) {
      results = std::move(*out);
      break;
    }
    // Multiples of the step, not sums, so that no rounding accumulates;
    // rounded so that reports read 0.03, not 0.029999999999999999, unless
    // that would undo the step.
    double next = percdamp + attempts * dampStep;
    if (double rounded = std::round(next * 1e9) / 1e9;
        static_cast<float>(rounded) > static_cast<float>(damp))
      next = rounded;
    if (next >= 1.0 || attempts >= maxAttempts ||
        !(static_cast<float>(next) > static_cast<float>(damp)))
      return fail(hessianPath +
                  ": the Hessian is not positive definite even with "
                  "percdamp " +
                  number(damp) + " (" + llvm::Twine(attempts) +
                  " attempts; --damp-step and --max-attempts set the "
                  "retries); check the calibration data");
    llvm::WithColor::warning(llvm::errs(), "gptq-quantize-layer")
        << hessianPath << ": the Hessian is not positive definite with "
        << "percdamp " << number(damp) << "; retrying with " << number(next)
        << "\n";
    damp = next;
  }

  // Overflow in float32 (e.g. a Hessian with entries near 3.4e38) shows as
  // non-finite results: an error, never a report of nan.
  double loss = *results[5].as<float>();
  {
    std::optional<std::string> bad;
    const char *what = "loss";
    if (!std::isfinite(loss))
      bad = "nan";
    for (auto [i, name] : {std::pair(1, "scales"), std::pair(2, "zeros"),
                           std::pair(4, "dequantized weights")})
      if (!bad && (bad = findNonFinite(results[i])))
        what = name;
    if (bad)
      return fail(hessianPath + ": the " + what + " came out non-finite (" +
                  *bad +
                  "): float32 overflowed; the Hessian's entries are too "
                  "large (GPTQ's result does not change when H is scaled "
                  "by a constant, so scale it down)");
  }

  llvm::json::Object report{
      {"loss", loss},
      {"percdamp_used", damp},
      {"percdamp_requested", static_cast<double>(percdamp)},
      {"attempts", static_cast<int64_t>(attempts)},
      {"seconds", seconds},
      {"compile_seconds", (*fn)->compileSeconds()},
      {"compiled_code_cached", (*fn)->fromCache()},
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

  // Every file is written beside its final name first and renamed into
  // place once all of them are written: a failure replaces none.
  results[0].dtype = DType::U8;
  if (llvm::Error err = createOutputDirectory(outDir))
    return fail(llvm::toString(std::move(err)));
  PendingOutputs outputs;
  for (int i = 0; i < 5; ++i)
    if (llvm::Error err = outputs.add(outputPath(kOutputNames[i]),
                                      [&](llvm::raw_ostream &os) {
                                        writeNpy(os, results[i]);
                                        return llvm::Error::success();
                                      }))
      return fail(llvm::toString(std::move(err)));
  if (llvm::Error err = outputs.add(
          outputPath("report.json"),
          llvm::formatv("{0:2}\n", llvm::json::Value(std::move(report))).str()))
    return fail(llvm::toString(std::move(err)));
  if (llvm::Error err = outputs.commit())
    return fail(llvm::toString(std::move(err)));
  llvm::errs() << "gptq-quantize-layer: " << rows << " x " << cols << ", loss "
               << number(loss) << ", percdamp " << number(damp) << ", "
               << llvm::format("%.3f", seconds) << " s (compile "
               << llvm::format("%.3f", (*fn)->compileSeconds()) << " s) -> "
               << outDir << "\n";
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // As in the other tools: the work runs on a thread with a large stack.
  return runTool("gptq-quantize-layer", [&] { return run(argc, argv); });
}
