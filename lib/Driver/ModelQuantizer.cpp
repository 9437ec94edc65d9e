//===- ModelQuantizer.cpp - One run of quantizeModel ----------------------===//
//
// The run: what the options mean for this module, the run's files, the
// layers selected and their weights, then the layers quantized by the
// method the options choose (rounded, from given Hessians, or calibrated
// stage by stage), rewritten, and the outputs written.
//
//===----------------------------------------------------------------------===//

#include "ModelQuantizer.h"

#include "gptq/Dialect/GPTQ/IR/GPTQ.h"
#include "gptq/Quantize/EntryFunction.h"
#include "gptq/Runtime/Allocator.h"
#include "gptq/Support/Npz.h"
#include "gptq/Support/Output.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdio>
#include <sys/resource.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

using namespace mlir;
using namespace mlir::gptq;
using namespace mlir::gptq::driver;

//===----------------------------------------------------------------------===//
// Utilities
//===----------------------------------------------------------------------===//

double driver::secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int64_t driver::residentBytes() {
  std::FILE *statm = std::fopen("/proc/self/statm", "r");
  if (!statm)
    return 0;
  long size = 0, resident = 0;
  int read = std::fscanf(statm, "%ld %ld", &size, &resident);
  std::fclose(statm);
  return read == 2 ? int64_t(resident) * sysconf(_SC_PAGESIZE) : 0;
}

int64_t driver::peakResidentBytes() {
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0)
    return 0;
  return int64_t(usage.ru_maxrss) * 1024; // kilobytes on Linux
}

std::string driver::formatDuration(double seconds) {
  long s = long(std::max(seconds, 0.0) + 0.5);
  char text[48];
  if (s < 60)
    std::snprintf(text, sizeof text, "%ld s", s);
  else if (s < 3600)
    std::snprintf(text, sizeof text, "%ld min %02ld s", s / 60, s % 60);
  else
    std::snprintf(text, sizeof text, "%ld h %02ld min", s / 3600,
                  s % 3600 / 60);
  return text;
}

/// Calibration frees hundreds of MB of activations after each pass, which
/// the compiled code's allocator and malloc would otherwise keep for buffers
/// of the same sizes, which the next stage does not ask for.
void driver::releaseFreedMemory() {
  runtime::releaseCachedBuffers();
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

/// Raw little-endian data of a `dense` or `dense_resource` attribute of a
/// byte-sized element type; the array reads the attribute's data in place
/// (the context keeps it), except for a splat, which is expanded.
std::optional<NpyArray> driver::arrayOf(ElementsAttr attr) {
  auto type = cast<ShapedType>(attr.getType());
  // i1 is stored bit-packed, not as the bytes of a bool array.
  std::optional<DType> dtype = dtypeOfElementType(type.getElementType());
  if (!dtype || *dtype == DType::Bool || !type.hasStaticShape())
    return std::nullopt;
  std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
  size_t bytes = size_t(type.getNumElements()) * dtypeSize(*dtype);
  if (auto dense = dyn_cast<DenseElementsAttr>(attr);
      dense && dense.isSplat()) {
    ArrayRef<char> raw = dense.getRawData();
    size_t elem = dtypeSize(*dtype);
    if (raw.size() != elem)
      return std::nullopt;
    NpyArray a = NpyArray::zeros(*dtype, std::move(shape));
    for (size_t i = 0; i < bytes; i += elem)
      std::memcpy(a.data.data() + i, raw.data(), elem);
    return a;
  }
  std::optional<ArrayRef<char>> raw = rawElementData(attr);
  if (!raw || raw->size() != bytes)
    return std::nullopt;
  return NpyArray::borrowing(*dtype, std::move(shape), *raw);
}

NpyArray driver::transposed(const NpyArray &a) {
  int64_t rows = a.shape[0], cols = a.shape[1];
  NpyArray t = NpyArray::zeros(DType::F32, {cols, rows});
  const float *src = a.as<float>();
  float *dst = t.as<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      dst[c * rows + r] = src[r * cols + c];
  return t;
}

/// A float32 copy of a float array (float32, float16 or bfloat16).
static NpyArray widened(const NpyArray &a) {
  NpyArray wide = NpyArray::zeros(DType::F32, a.shape);
  widenToFloat32(a.dtype, a.data.data(), a.numElements(), wide.as<float>());
  return wide;
}

//===----------------------------------------------------------------------===//
// The run
//===----------------------------------------------------------------------===//

ModelQuantizer::ModelQuantizer(ModuleOp module,
                               const QuantizeModelOptions &options,
                               RunFiles &files, const QuantizeModelIO &io)
    : module(module), options(options), files(files), io(io),
      startTime(Clock::now()) {}

InFlightDiagnostic ModelQuantizer::fail(Location loc) {
  return emitError(loc) << kPassName << ": ";
}

llvm::raw_ostream &ModelQuantizer::log() {
  return io.log ? *io.log : llvm::errs();
}

bool ModelQuantizer::hasCalibration() const {
  return !options.calibration.empty() || io.calibration.has_value();
}

std::string ModelQuantizer::calibrationName() const {
  return options.calibration.empty() ? std::string("the calibration samples")
                                     : "calibration=" + options.calibration;
}

LogicalResult ModelQuantizer::run() {
  if (failed(makeQuantizers()))
    return failure();
  FailureOr<func::FuncOp> entryFunc = findEntryFunction(
      module, options.entry, [&](Location at) { return fail(at); });
  if (failed(entryFunc))
    return failure();
  func = *entryFunc;
  if (failed(checkOptionsForModule()) || failed(addFiles()) ||
      failed(bindParameters()) || failed(selectLayers()) ||
      failed(checkWeights()))
    return failure();

  log() << kPassName << ": quantizing " << states.size() << " linear layer"
        << (states.size() == 1 ? "" : "s") << " of '@" << func.getSymName()
        << "' with "
        << (options.method == QuantizeMethod::GPTQ ? "gptq" : "rtn") << ", "
        << config << "\n";
  if (failed(quantizeLayers()))
    return failure();

  // The rewrite fails only for a weight that format=quant cannot express
  // (GPTQ's grids always fit); it runs before the outputs are written, so
  // that the report has its time. When writing them fails, the run fails
  // and the caller does not write the rewritten module either.
  auto rewriteStart = Clock::now();
  if (failed(rewrite()))
    return failure();
  if (boundArguments && failed(restoreBoundArguments(func, *boundArguments))) {
    fail(func.getLoc()) << "cannot put the arguments parameters= bound back";
    return failure();
  }
  times.rewrite = secondsSince(rewriteStart);
  times.total = secondsSince(startTime);
  QuantizeModelReport report = makeReport();
  if (failed(writeOutputs(report)))
    return failure();
  if (io.report)
    *io.report = report;
  printSummary(report);
  return success();
}

/// The configuration, its round-to-nearest twin (no act-order nor static
/// groups) and a quantizer for each.
LogicalResult ModelQuantizer::makeQuantizers() {
  MLIRContext *context = module.getContext();
  Location loc = module.getLoc();
  std::string configError;
  {
    ScopedDiagnosticHandler handler(context, [&](Diagnostic &d) {
      configError = d.str();
      return success();
    });
    ConfigAttr defaults = ConfigAttr::getDefault(context);
    auto make = [&](bool act, bool stat) {
      return ConfigAttr::getChecked(
          [&] { return emitError(loc); }, context, options.bits,
          options.groupSize, options.sym, act, stat,
          llvm::APFloat(options.percdamp), options.blockSize, options.mse,
          defaults.getMseNorm(), defaults.getMseGrid(),
          defaults.getMseMaxShrink());
    };
    config = make(options.actOrder, options.staticGroups);
    if (config)
      rtnConfig = make(false, false);
  }
  if (!config) {
    fail(loc) << "invalid quantization options: " << configError;
    return failure();
  }
  LayerQuantizerOptions quantizerOptions;
  quantizerOptions.dampStep = options.dampStep;
  quantizerOptions.maxAttempts = options.maxAttempts;
  quantizerOptions.dampStepName = "damp-step";
  quantizerOptions.maxAttemptsName = "max-attempts";
  jitOptions.cacheDir = options.compileCache;
  jitOptions.toolName = "gptq-opt";
  quantizerOptions.jit = jitOptions;
  for (auto [quantizer, made] :
       {std::pair(&gptq, config), std::pair(&rtn, rtnConfig)}) {
    auto created = LayerQuantizer::create(made, quantizerOptions);
    if (!created) {
      fail(loc) << llvm::toString(created.takeError());
      return failure();
    }
    *quantizer = std::move(*created);
  }
  outputErrors = std::make_unique<OutputError>(jitOptions);
  return success();
}

/// The options that go together or not, given what the caller supplies.
LogicalResult ModelQuantizer::checkOptionsForModule() {
  Location loc = module.getLoc();
  bool gptqMethod = options.method == QuantizeMethod::GPTQ;
  if (gptqMethod && !hasCalibration() && options.hessians.empty()) {
    fail(loc) << "method=gptq needs calibration=FILE.npy (calibration "
                 "samples) or hessians=FILE.npz (Hessians by layer name); "
                 "method=rtn needs neither";
    return failure();
  }
  if (hasCalibration() && !options.hessians.empty()) {
    fail(loc) << "calibration= and hessians= both given; the Hessians come "
                 "from one of them";
    return failure();
  }
  if (!gptqMethod && (hasCalibration() || !options.hessians.empty() ||
                      !options.dumpHessians.empty())) {
    fail(loc) << "method=rtn uses no calibration: drop calibration=, "
                 "hessians= and dump-hessians=";
    return failure();
  }
  if (!options.dumpStages.empty() && !hasCalibration()) {
    fail(loc) << "dump-stages= writes the functions that calibration runs; "
                 "give calibration= too";
    return failure();
  }
  return success();
}

/// Output files are checked now, not after the work: their folder must
/// exist, and none may be an input of the run or another of its outputs
/// (in gptq-opt, the tool's files know the module, its parameter archive
/// and -o too; the files are committed with -o, after the last pass).
LogicalResult ModelQuantizer::addFiles() {
  Location loc = module.getLoc();
  for (auto [option, path] :
       {std::pair<StringRef, StringRef>("calibration=", options.calibration),
        std::pair<StringRef, StringRef>("hessians=", options.hessians)}) {
    if (path.empty())
      continue;
    if (llvm::Error err = files.addInput(path, option)) {
      fail(loc) << llvm::toString(std::move(err));
      return failure();
    }
  }
  for (auto [option, path] :
       {std::pair<StringRef, StringRef>("report=", options.report),
        std::pair<StringRef, StringRef>("dump-hessians=", options.dumpHessians),
        std::pair<StringRef, StringRef>("dump-stages=", options.dumpStages)}) {
    if (path.empty())
      continue;
    StringRef parent = llvm::sys::path::parent_path(path);
    if (!parent.empty() && !llvm::sys::fs::is_directory(parent)) {
      fail(loc) << option << path << ": no directory '" << parent
                << "' to write it in";
      return failure();
    }
    if (llvm::sys::fs::is_directory(path)) {
      fail(loc) << option << path << ": is a directory, expected a "
                << "file name";
      return failure();
    }
    if (llvm::Error err = files.addOutput(path, option)) {
      fail(loc) << llvm::toString(std::move(err));
      return failure();
    }
  }
  return success();
}

/// Weights that are arguments: constants of the archive's values for the
/// run, the arguments put back (unread) after the rewrite.
LogicalResult ModelQuantizer::bindParameters() {
  if (options.parameters.empty())
    return success();
  if (llvm::Error err = files.addInput(options.parameters, "parameters=")) {
    fail(module.getLoc()) << llvm::toString(std::move(err));
    return failure();
  }
  FailureOr<BoundArguments> bound = bindArgumentParameters(
      func, options.parameters, [&](Location at) { return fail(at); });
  if (failed(bound))
    return failure();
  boundArguments = std::move(*bound);
  log() << kPassName << ": parameters=" << options.parameters << " binds "
        << boundArguments->arguments.size() << " of the arguments of '@"
        << func.getSymName() << "'\n";
  return success();
}

LogicalResult ModelQuantizer::selectLayers() {
  auto filter = LayerNameFilter::create(options.include, options.exclude);
  if (!filter) {
    fail(module.getLoc()) << llvm::toString(filter.takeError());
    return failure();
  }
  linears.emplace(module);
  size_t found = 0;
  for (const LinearLayer *layer :
       selectQuantizedLayers(*linears, func, *filter, options.classifier,
                             options.routers, found)) {
    LayerState state;
    state.layer = layer;
    states.push_back(std::move(state));
  }
  if (!states.empty())
    return success();
  if (found)
    fail(func.getLoc()) << "none of the " << found << " linear layers of '@"
                        << func.getSymName() << "' is selected (include='"
                        << options.include << "', exclude='" << options.exclude
                        << "', classifier="
                        << (options.classifier ? "true" : "false")
                        << ", routers=" << (options.routers ? "true" : "false")
                        << ")";
  else
    fail(func.getLoc()) << "no linear layer in '@" << func.getSymName()
                        << "': no linalg contraction of an activation with "
                           "a constant 2-D float weight";
  return failure();
}

/// Every weight is float32, or bf16/f16 widened to it, and has data; tied
/// weights are untied.
LogicalResult ModelQuantizer::checkWeights() {
  for (auto [i, state] : llvm::enumerate(states)) {
    const LinearLayer &layer = *state.layer;
    auto type = cast<ShapedType>(layer.weightAttr.getType());
    Type element = type.getElementType();
    bool widening = layer.weightSource != layer.weightConstant;
    auto sourceType = cast<ShapedType>(layer.weightSource->getResultTypes()[0]);
    if (!sourceType.getElementType().isF32() ||
        !(element.isF32() || element.isF16() || element.isBF16())) {
      InFlightDiagnostic d = fail(layer.op->getLoc());
      d << "layer '" << layer.name << "' has a weight of " << element;
      if (widening)
        d << " widened to " << sourceType.getElementType();
      d << "; only f32 weights, and bf16 or f16 weights widened to f32 by "
           "an arith.extf, are quantized";
      return failure();
    }
    if (!arrayOf(layer.weightAttr)) {
      fail(layer.weightSource->getLoc())
          << "layer '" << layer.name
          << "': its weight has no data (a dense_resource whose blob is "
             "missing or elided)";
      return failure();
    }
    // The float32 copy is made when the layer is quantized (ensureWeight).
    state.weightBytes = layer.outFeatures * layer.inFeatures * 4;
    // A tied weight gets its own copy, so that the other users keep the
    // float values.
    if (layer.sharedWeight)
      untieWeight(const_cast<LinearLayer &>(layer));
    layerOfWeight[layer.weightSource] = i;
    if (options.method == QuantizeMethod::GPTQ && hasCalibration())
      state.uncalibrated = uncalibratedReason(func, layer);
  }
  return success();
}

LogicalResult ModelQuantizer::quantizeLayers() {
  if (options.method == QuantizeMethod::RoundToNearest) {
    for (unsigned i = 0; i < states.size(); ++i)
      if (failed(roundLayer(i, "rtn")))
        return failure();
    return success();
  }
  if (!options.hessians.empty())
    return quantizeWithGivenHessians();
  return quantizeCalibrated();
}

LogicalResult ModelQuantizer::quantizeWithGivenHessians() {
  const std::string &path = options.hessians;
  auto entries = readNpz(path);
  if (!entries) {
    fail(module.getLoc()) << "hessians=" << path << ": "
                          << llvm::toString(entries.takeError());
    return failure();
  }
  for (LayerState &state : states) {
    const std::string &name = state.layer->name;
    auto it = llvm::find_if(*entries,
                            [&](const NpzEntry &e) { return e.name == name; });
    if (it == entries->end()) {
      fail(state.layer->op->getLoc())
          << "hessians=" << path << " has no Hessian for layer '" << name
          << "'";
      return failure();
    }
    int64_t in = state.layer->inFeatures;
    if (it->array.dtype != DType::F32 ||
        it->array.shape != std::vector<int64_t>{in, in}) {
      fail(state.layer->op->getLoc())
          << "hessians=" << path << ": '" << name << "' is "
          << it->array.describe() << ", expected float32 [" << in << ", " << in
          << "]";
      return failure();
    }
    state.hessian = std::move(it->array);
    state.samples = 1;
    state.tokens = -1;
  }
  // Every Hessian is checked before any layer is quantized.
  for (unsigned i = 0; i < states.size(); ++i)
    if (failed(quantizeLayer(i)))
      return failure();
  return success();
}

LogicalResult ModelQuantizer::quantizeCalibrated() {
  for (const LayerState &state : states)
    if (!state.uncalibrated.empty())
      emitWarning(state.layer->op->getLoc())
          << kPassName << ": calibration cannot reach layer '"
          << state.layer->name << "' (" << state.uncalibrated
          << "); it is rounded to nearest";
  if (llvm::none_of(
          states, [](const LayerState &s) { return s.uncalibrated.empty(); })) {
    fail(func.getLoc()) << "calibration reaches none of the selected "
                           "layers";
    return failure();
  }
  // Layers that calibration cannot reach are rounded first, so that the
  // layers calibrated after them see their quantized outputs.
  for (unsigned i = 0; i < states.size(); ++i)
    if (!states[i].uncalibrated.empty() &&
        failed(roundLayer(i, "rtn (not calibrated)")))
      return failure();
  return calibrate();
}

const NpyArray *ModelQuantizer::constantArray(Operation *op) {
  auto it = constantArrays.find(op);
  if (it != constantArrays.end())
    return &it->second;
  // A layer's widened weight: float32 values of the stored ones.
  if (auto ext = dyn_cast<arith::ExtFOp>(op)) {
    Operation *def = ext.getIn().getDefiningOp();
    std::optional<NpyArray> stored =
        def ? arrayOf(constantElements(def)) : std::nullopt;
    if (!stored)
      return nullptr;
    return &constantArrays.try_emplace(op, widened(*stored)).first->second;
  }
  std::optional<NpyArray> a = arrayOf(constantElements(op));
  if (!a)
    return nullptr;
  return &constantArrays.try_emplace(op, std::move(*a)).first->second;
}

LogicalResult ModelQuantizer::ensureWeight(unsigned index) {
  LayerState &state = states[index];
  if (state.weight.data.size())
    return success();
  const LinearLayer &layer = *state.layer;
  // A widened weight is the calibration's widened copy (one copy for
  // both); else the constant's data, in place.
  std::optional<NpyArray> w;
  if (layer.weightSource != layer.weightConstant) {
    if (const NpyArray *wide = constantArray(layer.weightSource))
      w = wide->borrowed();
  } else {
    w = arrayOf(layer.weightAttr);
  }
  if (!w) {
    fail(layer.weightSource->getLoc())
        << "layer '" << layer.name
        << "': its weight has no data (a dense_resource whose blob is "
           "missing or elided)";
    return failure();
  }
  state.weight = layer.transposed ? transposed(*w) : std::move(*w);
  if (std::optional<std::string> bad = findNonFinite(state.weight)) {
    fail(layer.weightSource->getLoc())
        << "layer '" << layer.name << "': its weight has " << *bad;
    return failure();
  }
  return success();
}
