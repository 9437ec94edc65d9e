//===- QuantizeLayer.cpp - GPTQ of one linear layer -----------------------===//
//
// Checks a layer's inputs, compiles a module around gptq.quantize_layer once
// (shapes are dynamic, so the compiled code serves any layer of the same
// configuration), runs it, and escalates the dampening when the Hessian
// cannot be factorized.
//
//===----------------------------------------------------------------------===//

#include "gptq/Driver/QuantizeLayer.h"
#include "gptq/Runtime/LaunchCount.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Parallel.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

using namespace mlir;
using namespace mlir::gptq;

std::string mlir::gptq::formatNumber(double value) {
  return llvm::formatv("{0}", llvm::format("%g", value)).str();
}

/// The position of the first NaN or infinity of a float32 array, as
/// "nan at [i, j]".
std::optional<std::string> mlir::gptq::findNonFinite(const NpyArray &a) {
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

namespace {
llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Checks dtype, rank and finiteness; names the first bad entry.
llvm::Error checkMatrix(const NpyArray &a, llvm::StringRef name) {
  auto fail = [&](const llvm::Twine &m) { return error(name + ": " + m); };
  if (a.dtype != DType::F32)
    return fail("expected float32, found " + dtypeName(a.dtype));
  if (a.shape.size() != 2)
    return fail("expected a matrix (rank 2), found shape " + a.describe());
  if (a.shape[0] == 0 || a.shape[1] == 0)
    return fail("expected a non-empty matrix, found " + a.describe());
  if (std::optional<std::string> bad = findNonFinite(a))
    return fail("non-finite value " + *bad);
  return llvm::Error::success();
}

/// Checks the weight and the Hessian and how they fit together; warns when
/// the Hessian is not symmetric.
llvm::Error checkInputs(const NpyArray &weight, const NpyArray &hessian,
                        const LayerNames &names, LayerWarningHandler warn) {
  if (llvm::Error err = checkMatrix(weight, names.weight))
    return err;
  if (llvm::Error err = checkMatrix(hessian, names.hessian))
    return err;
  int64_t cols = weight.shape[1];
  if (hessian.shape[0] != hessian.shape[1])
    return error(names.hessian + ": expected a square matrix, found " +
                 hessian.describe());
  if (hessian.shape[0] != cols)
    return error(names.hessian + ": expected " + llvm::Twine(cols) + " x " +
                 llvm::Twine(cols) + " to match the " + llvm::Twine(cols) +
                 " columns of " + names.weight + ", found " +
                 hessian.describe());

  // Dampening adds percdamp * mean(diag(H)) (dead inputs counting as 1): it
  // cannot help when that mean is not positive.
  const float *h = hessian.as<float>();
  double sum = 0;
  for (int64_t i = 0; i < cols; ++i)
    sum += h[i * cols + i] == 0.0f ? 1.0 : h[i * cols + i];
  if (!(sum > 0))
    return error(names.hessian + ": the mean of the Hessian diagonal is " +
                 formatNumber(sum / cols) +
                 ", not positive: it is not a Hessian of calibration "
                 "inputs, and no dampening makes it positive definite");

  // The factorization reads the upper triangle of H, the reference's
  // torch.linalg.cholesky the lower: they agree on symmetric Hessians (as
  // 2/n X^T X is, up to rounding), and only on those.
  // One pass over the pairs (i, j), i <= j, finds both the largest entry
  // and the largest asymmetry.
  float largest = 0, worst = 0;
  int64_t wi = 0, wj = 0;
  for (int64_t i = 0; i < cols; ++i)
    for (int64_t j = i; j < cols; ++j) {
      float upper = h[i * cols + j], lower = h[j * cols + i];
      largest = std::max({largest, std::fabs(upper), std::fabs(lower)});
      if (float d = std::fabs(upper - lower); d > worst) {
        worst = d;
        wi = i;
        wj = j;
      }
    }
  if (worst > 1e-5f * largest && warn)
    warn(names.hessian + ": the Hessian is not symmetric (H[" +
         llvm::Twine(wi) + ", " + llvm::Twine(wj) + "] = " +
         formatNumber(h[wi * cols + wj]) + " but H[" + llvm::Twine(wj) + ", " +
         llvm::Twine(wi) + "] = " + formatNumber(h[wj * cols + wi]) +
         "); its upper triangle is used, where the reference uses the "
         "lower: symmetrize it, e.g. (H + H^T) / 2");
  return llvm::Error::success();
}

/// A rows x cols matrix of `element`.
RankedTensorType matrixOf(Type element) {
  return RankedTensorType::get({ShapedType::kDynamic, ShapedType::kDynamic},
                               element);
}

/// A new module named `name` in messages, holding the public function
/// @`entry` of `type`, with `b` at the start of its body.
OwningOpRef<ModuleOp> createEntryModule(OpBuilder &b, StringRef name,
                                        StringRef entry, FunctionType type) {
  Location loc = NameLoc::get(b.getStringAttr(name));
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto fn = func::FuncOp::create(b, loc, entry, type);
  b.setInsertionPointToStart(fn.addEntryBlock());
  return module;
}

/// The function's arguments.
ValueRange entryArguments(ModuleOp module) {
  return cast<func::FuncOp>(module.getBody()->front()).getArguments();
}

/// The scalar held by the rank-0 tensor `value`.
Value extractScalar(OpBuilder &b, Location loc, Value value) {
  return tensor::ExtractOp::create(b, loc, value, ValueRange{});
}

/// @pack(codes) -> gptq.pack of the codes at `bits`.
OwningOpRef<ModuleOp> buildPackModule(MLIRContext *ctx, int64_t bits) {
  OpBuilder b(ctx);
  Type codes = matrixOf(b.getI8Type()), words = matrixOf(b.getI32Type());
  OwningOpRef<ModuleOp> module = createEntryModule(
      b, "gptq-pack", "pack", b.getFunctionType({codes}, {words}));
  Location loc = module->getLoc();
  Value packed =
      PackOp::create(b, loc, words, entryArguments(*module)[0], bits);
  func::ReturnOp::create(b, loc, packed);
  return module;
}

/// @quantize(w, h, percdamp, bits) -> gptq.quantize_layer of the weight
/// with `config` at the given dampening and width, and its codes
/// dequantized; the loss and whether the factorization succeeded as rank-0
/// tensors.
OwningOpRef<ModuleOp> buildQuantizeModule(MLIRContext *ctx, ConfigAttr config) {
  OpBuilder b(ctx);
  Type f32 = b.getF32Type(), i1 = b.getI1Type();
  Type floats = matrixOf(f32), codes = matrixOf(b.getI8Type());
  Type groups = RankedTensorType::get({ShapedType::kDynamic}, b.getI32Type());
  Type loss = RankedTensorType::get({}, f32),
       ok = RankedTensorType::get({}, i1);
  OwningOpRef<ModuleOp> module = createEntryModule(
      b, "gptq-quantize-layer", "quantize",
      b.getFunctionType(
          {floats, floats, loss, RankedTensorType::get({}, b.getI64Type())},
          {codes, floats, floats, groups, floats, loss, ok}));
  Location loc = module->getLoc();
  ValueRange args = entryArguments(*module);
  Value damp = extractScalar(b, loc, args[2]);
  Value bits = extractScalar(b, loc, args[3]);
  auto layer =
      QuantizeLayerOp::create(b, loc, codes, floats, floats, groups, f32, i1,
                              args[0], args[1], damp, bits, config);
  Value dequantized =
      DequantizeOp::create(b, loc, floats, layer.getCodes(), layer.getScales(),
                           layer.getZeros(), layer.getGIdx());
  Value lossTensor =
      tensor::FromElementsOp::create(b, loc, loss, layer.getLoss());
  Value okTensor = tensor::FromElementsOp::create(b, loc, ok, layer.getOk());
  func::ReturnOp::create(b, loc,
                         ValueRange{layer.getCodes(), layer.getScales(),
                                    layer.getZeros(), layer.getGIdx(),
                                    dequantized, lossTensor, okTensor});
  return module;
}

/// @grid(w, bits) -> gptq.grid's scales and zeros of the weight with
/// `config` at the given width.
OwningOpRef<ModuleOp> buildGridModule(MLIRContext *ctx, ConfigAttr config) {
  OpBuilder b(ctx);
  Type floats = matrixOf(b.getF32Type());
  OwningOpRef<ModuleOp> module = createEntryModule(
      b, "gptq-grid", "grid",
      b.getFunctionType({floats, RankedTensorType::get({}, b.getI64Type())},
                        {floats, floats}));
  Location loc = module->getLoc();
  ValueRange args = entryArguments(*module);
  Value bits = extractScalar(b, loc, args[1]);
  auto grid = GridOp::create(b, loc, floats, floats, args[0], bits, config);
  func::ReturnOp::create(b, loc, grid.getResults());
  return module;
}
} // namespace

llvm::Error
mlir::gptq::checkEscalationOptions(double percdamp,
                                   const LayerQuantizerOptions &options) {
  if (!(options.dampStep > 0) || !std::isfinite(options.dampStep))
    return error(options.dampStepName + " must be a positive number");
  if (options.maxAttempts < 1)
    return error(options.maxAttemptsName + " must be >= 1");
  // The compiled code computes in float32: a step lost to rounding would
  // retry with the same dampening.
  if (!(static_cast<float>(percdamp + options.dampStep) >
        static_cast<float>(percdamp)))
    return error(options.dampStepName + " " + formatNumber(options.dampStep) +
                 " is lost to float32 rounding at percdamp " +
                 formatNumber(percdamp) + "; use a larger step");
  return llvm::Error::success();
}

LayerQuantizer::~LayerQuantizer() = default;

llvm::Expected<std::unique_ptr<LayerQuantizer>>
LayerQuantizer::create(ConfigAttr config,
                       const LayerQuantizerOptions &options) {
  if (llvm::Error err =
          checkEscalationOptions(config.getPercdampValue(), options))
    return std::move(err);
  std::unique_ptr<LayerQuantizer> quantizer(new LayerQuantizer());
  // The width is an argument of the compiled code: one compiled quantizer
  // serves the configurations that differ only in it.
  quantizer->compiledConfig =
      [groupSize = config.getGroupSize(), sym = config.getSym(),
       actOrder = config.getActOrder(), staticGroups = config.getStaticGroups(),
       percdamp = config.getPercdamp(), blockSize = config.getBlockSize(),
       mse = config.getMse(), mseNorm = config.getMseNorm(),
       mseGrid = config.getMseGrid(),
       mseMaxShrink = config.getMseMaxShrink()](MLIRContext *ctx) {
        return ConfigAttr::get(ctx, ConfigAttr::getDefault(ctx).getBits(),
                               groupSize, sym, actOrder, staticGroups, percdamp,
                               blockSize, mse, mseNorm, mseGrid, mseMaxShrink);
      };
  quantizer->requestedPercdamp = config.getPercdampValue();
  quantizer->bits = config.getBits();
  quantizer->groupSize = config.getGroupSize();
  quantizer->sym = config.getSym();
  quantizer->mse = config.getMse();
  quantizer->options = options;
  return quantizer;
}

double LayerQuantizer::compileSeconds() const {
  return (function ? function->compileSeconds() : 0) +
         (packer ? packer->compileSeconds() : 0) +
         (grids ? grids->compileSeconds() : 0);
}

bool LayerQuantizer::fromCache() const {
  return function && function->fromCache();
}

llvm::Error LayerQuantizer::compilePacker() {
  return compileInto(packer, buildPackModule(&ownContext(), bits), "pack");
}

llvm::Error LayerQuantizer::prepare(bool packing) {
  if (!function)
    if (llvm::Error err = compile())
      return err;
  if (packing && !packer)
    if (llvm::Error err = compilePacker())
      return err;
  return llvm::Error::success();
}

llvm::Expected<NpyArray> LayerQuantizer::pack(const NpyArray &codes) {
  if ((codes.dtype != DType::U8 && codes.dtype != DType::I8) ||
      codes.shape.size() != 2)
    return error("codes to pack: expected uint8 rows x cols, found " +
                 codes.describe());
  if (!packer)
    if (llvm::Error err = compilePacker())
      return std::move(err);
  auto out = packer->call({codes.borrowed()}, {"codes"});
  if (!out)
    return out.takeError();
  return std::move((*out)[0]);
}

MLIRContext &LayerQuantizer::ownContext() {
  if (!context)
    context = makeToolContext();
  return *context;
}

llvm::Error LayerQuantizer::compileInto(std::unique_ptr<CompiledFunction> &slot,
                                        OwningOpRef<ModuleOp> module,
                                        llvm::StringRef entry) {
  auto fn = CompiledFunction::compile(std::move(module), entry, options.jit);
  if (!fn)
    return fn.takeError();
  slot = std::move(*fn);
  return llvm::Error::success();
}

llvm::Error LayerQuantizer::compile() {
  // The dampening is an argument, so escalating it reuses the compiled code;
  // the width too, so other widths do.
  MLIRContext &ctx = ownContext();
  if (llvm::Error err =
          compileInto(function, buildQuantizeModule(&ctx, compiledConfig(&ctx)),
                      "quantize"))
    return err;
  ++compileCount;
  return llvm::Error::success();
}

llvm::Expected<LayerResult> LayerQuantizer::quantize(NpyArray weight,
                                                     NpyArray hessian,
                                                     const LayerNames &names,
                                                     LayerWarningHandler warn) {
  if (llvm::Error err = checkInputs(weight, hessian, names, warn))
    return std::move(err);
  if (!function)
    if (llvm::Error err = compile())
      return std::move(err);

  LayerResult result;
  double damp = requestedPercdamp;
  std::vector<NpyArray> results;
  // The arguments are built once, outside the timing: W and H move in.
  std::vector<NpyArray> args;
  args.push_back(std::move(weight));
  args.push_back(std::move(hessian));
  args.push_back(NpyArray::zeros(DType::F32, {}));
  args.push_back(NpyArray::zeros(DType::I64, {}));
  *args[3].as<int64_t>() = bits;
  const std::vector<std::string> argNames = {names.weight, names.hessian,
                                             "percdamp", "bits"};
  while (true) {
    ++result.attempts;
    *args[2].as<float>() = static_cast<float>(damp);
    auto start = std::chrono::steady_clock::now();
    uint64_t launchesBefore = gptq_runtime_launches();
    auto out = function->call(args, argNames);
    result.seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    result.kernelLaunches += gptq_runtime_launches() - launchesBefore;
    if (!out)
      return out.takeError();
    if (*(*out)[6].as<bool>()) {
      results = std::move(*out);
      break;
    }
    // Multiples of the step, not sums, so that no rounding accumulates;
    // rounded so that reports read 0.03, not 0.029999999999999999, unless
    // that would undo the step.
    double next = requestedPercdamp + result.attempts * options.dampStep;
    if (double rounded = std::round(next * 1e9) / 1e9;
        static_cast<float>(rounded) > static_cast<float>(damp))
      next = rounded;
    if (next >= 1.0 || result.attempts >= options.maxAttempts ||
        !(static_cast<float>(next) > static_cast<float>(damp)))
      return error(names.hessian +
                   ": the Hessian is not positive definite even with "
                   "percdamp " +
                   formatNumber(damp) + " (" + llvm::Twine(result.attempts) +
                   " attempts; " + options.dampStepName + " and " +
                   options.maxAttemptsName +
                   " set the retries); check the calibration data");
    if (warn)
      warn(names.hessian + ": the Hessian is not positive definite with " +
           "percdamp " + formatNumber(damp) + "; retrying with " +
           formatNumber(next));
    damp = next;
  }

  // Overflow in float32 (e.g. a Hessian with entries near 3.4e38) shows as
  // non-finite results: an error, never a report of nan.
  double loss = *results[5].as<float>();
  std::optional<std::string> bad;
  const char *what = "loss";
  if (!std::isfinite(loss))
    bad = std::isnan(loss) ? "nan" : "inf";
  for (auto [i, name] : {std::pair(1, "scales"), std::pair(2, "zeros"),
                         std::pair(4, "dequantized weights")})
    if (!bad && (bad = findNonFinite(results[i])))
      what = name;
  if (bad)
    return error(names.hessian + ": the " + what + " came out non-finite (" +
                 *bad +
                 "): float32 overflowed; the Hessian's entries are too "
                 "large (GPTQ's result does not change when H is scaled "
                 "by a constant, so scale it down)");

  // Codes lie in [0, 2^bits): unsigned, as checkpoints store them.
  results[0].dtype = DType::U8;
  result.codes = std::move(results[0]);
  result.scales = std::move(results[1]);
  result.zeros = std::move(results[2]);
  result.gIdx = std::move(results[3]);
  result.dequantized = std::move(results[4]);
  result.loss = loss;
  result.percdampUsed = damp;
  return result;
}

namespace {
/// Codes and dequantized weights of `weight` (float32 rows x cols) on grids
/// of `groupSize` columns: the given `rows x groups` scales and zeros, or,
/// when none are given, the min-max grids computed as the kernel computes
/// them, in float32 (docs/gptq-semantics.md, section 2).
LayerResult roundRows(const NpyArray &weight, int64_t bits, int64_t groupSize,
                      bool sym, std::optional<NpyArray> givenScales,
                      std::optional<NpyArray> givenZeros) {
  int64_t rows = weight.shape[0], cols = weight.shape[1];
  int64_t size = groupSize > 0 ? groupSize : cols;
  int64_t groups = std::max<int64_t>((cols + size - 1) / size, 1);
  const float maxq = float((int64_t(1) << bits) - 1);
  const float symZero = (maxq + 1.0f) * 0.5f;
  LayerResult r;
  r.codes = NpyArray::zeros(DType::U8, {rows, cols});
  bool given = givenScales && givenZeros;
  r.scales = given ? std::move(*givenScales)
                   : NpyArray::zeros(DType::F32, {rows, groups});
  r.zeros = given ? std::move(*givenZeros)
                  : NpyArray::zeros(DType::F32, {rows, groups});
  r.gIdx = NpyArray::zeros(DType::I32, {cols});
  r.dequantized = NpyArray::zeros(DType::F32, {rows, cols});
  for (int64_t c = 0; c < cols; ++c)
    r.gIdx.as<int32_t>()[c] = int32_t(c / size);
  const float *w = weight.as<float>();
  uint8_t *codes = r.codes.as<uint8_t>();
  float *scales = r.scales.as<float>(), *zeros = r.zeros.as<float>();
  float *deq = r.dequantized.as<float>();
  llvm::parallelFor(0, rows, [&](size_t row) {
    for (int64_t g = 0; g < groups; ++g) {
      int64_t begin = g * size, end = std::min(cols, begin + size);
      const float *x = w + row * cols;
      if (!given) {
        // min/max start from 0, so that the grid holds 0; as arith.minimumf
        // and arith.maximumf, -0 is below +0.
        float lo = 0.0f, hi = 0.0f;
        for (int64_t c = begin; c < end; ++c) {
          float v = x[c];
          if (v < lo || (v == lo && std::signbit(v)))
            lo = v;
          if (v > hi || (v == hi && !std::signbit(v)))
            hi = v;
        }
        if (sym) {
          float alo = std::fabs(lo);
          float shi = alo > hi || (alo == hi && !std::signbit(alo)) ? alo : hi;
          lo = lo < 0.0f ? -shi : lo;
          hi = shi;
        }
        if (lo == 0.0f && hi == 0.0f) {
          lo = -1.0f;
          hi = 1.0f;
        }
        float scale = (hi - lo) / maxq;
        scales[row * groups + g] = scale;
        zeros[row * groups + g] = sym ? symZero : std::nearbyint(-lo / scale);
      }
      float scale = scales[row * groups + g], zero = zeros[row * groups + g];
      for (int64_t c = begin; c < end; ++c) {
        float q = std::nearbyint(x[c] / scale) + zero;
        q = std::min(std::max(q, 0.0f), maxq);
        codes[row * cols + c] = uint8_t(q);
        deq[row * cols + c] = scale * (q - zero);
      }
    }
  });
  return r;
}
} // namespace

llvm::Expected<LayerResult>
LayerQuantizer::roundToNearest(const NpyArray &weight,
                               const std::string &name) {
  if (llvm::Error err = checkMatrix(weight, name))
    return std::move(err);
  auto start = std::chrono::steady_clock::now();
  std::optional<NpyArray> scales, zeros;
  if (mse) {
    if (!grids) {
      MLIRContext &ctx = ownContext();
      if (llvm::Error err = compileInto(
              grids, buildGridModule(&ctx, compiledConfig(&ctx)), "grid"))
        return std::move(err);
      // The compilation is not the rounding's time.
      start = std::chrono::steady_clock::now();
    }
    NpyArray width = NpyArray::zeros(DType::I64, {});
    *width.as<int64_t>() = bits;
    auto out = grids->call({weight.borrowed(), width}, {name, "bits"});
    if (!out)
      return out.takeError();
    scales = std::move((*out)[0]);
    zeros = std::move((*out)[1]);
  }
  LayerResult r = roundRows(weight, bits, groupSize, sym, std::move(scales),
                            std::move(zeros));
  r.percdampUsed = requestedPercdamp;
  r.attempts = 1;
  r.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return r;
}
