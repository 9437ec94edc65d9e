//===- Jit.cpp - Compile and call MLIR functions on arrays ----------------===//

#include "gptq/Execution/Jit.h"

#include "CompileCache.h"

#include "gptq/Codegen/CPU/CpuIsa.h"
#include "gptq/Dialect/GPTQ/IR/GPTQ.h"
#include "gptq/Dialect/UKernel/IR/UKernel.h"
#include "gptq/Pipelines/Pipelines.h"
#include "gptq/Runtime/Allocator.h"
#include "gptq/Runtime/Checks.h"
#include "gptq/Runtime/CudaRuntime.h"
#include "gptq/Support/ModuleFile.h"
#include "gptq/Support/Output.h"
#include "gptq/Support/Signals.h"
#include "gptq/Support/SourceLines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/LLVMTranslationInterface.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/thread.h"
#include "llvm/Transforms/IPO/MergeFunctions.h"
#include "llvm/Target/TargetMachine.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <memory>
#include <new>
#include <sys/mman.h>
#include <unistd.h>

using namespace mlir;
using namespace mlir::gptq;

namespace {
const char *runningTool = "gptq-mlir";

[[noreturn]] void outOfMemory(const char *reason) {
  // No allocation from here on: the message is written piece by piece.
  llvm::raw_ostream &os = llvm::errs();
  os << runningTool << ": error: out of memory";
  if (reason && *reason)
    os << " (" << reason << ")";
  os << "; free memory or use smaller inputs\n";
  os.flush();
  llvm::sys::RunInterruptHandlers();
  ::_exit(1);
}
} // namespace

int mlir::gptq::runTool(const char *toolName, llvm::function_ref<int()> body) {
  runningTool = toolName;
  installToolSignalHandlers(toolName);
  std::set_new_handler([] { outOfMemory(nullptr); });
  llvm::install_bad_alloc_error_handler(
      [](void *, const char *reason, bool) { outOfMemory(reason); });
  int result = 1;
  llvm::thread worker(std::optional<unsigned>(kToolStackBytes), [&] {
    setFileThread(true);
    result = body();
    setFileThread(false);
  });
  worker.join();
  return result;
}

static DialectRegistry toolRegistry() {
  DialectRegistry registry;
  registerToolDialects(registry);
  return registry;
}

ToolInput::ToolInput() : ToolInput(llvm::errs()) {}

ToolInput::ToolInput(llvm::raw_ostream &diagnostics)
    : ctx(toolRegistry()), diagnostics(diagnostics),
      handler(sourceMgr, &ctx, diagnostics) {
  ctx.loadAllAvailableDialects();
}

std::unique_ptr<MLIRContext> mlir::gptq::makeToolContext() {
  auto context = std::make_unique<MLIRContext>(toolRegistry());
  context->loadAllAvailableDialects();
  return context;
}

llvm::Expected<OwningOpRef<ModuleOp>>
ToolInput::parse(llvm::StringRef path, bool regularOnly) {
  std::string message;
  auto file = openModuleFile(path, &message, regularOnly);
  if (!file)
    return llvm::createStringError(message);
  // A line too long to show (a weight's hexadecimal string is one line of
  // up to gigabytes) is not printed under the message: only its location.
  registerLongLineHandler(&ctx, file->getBufferIdentifier(), file->getBuffer(),
                          diagnostics);
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  // The parser stops at its first error; errors after it are what its
  // recovery makes of the same fault (a truncated string literal, then
  // "expected hex string blob"), so only the first is printed.
  bool seenError = false;
  ScopedDiagnosticHandler firstError(&ctx, [&](Diagnostic &d) {
    if (d.getSeverity() != DiagnosticSeverity::Error)
      return failure();
    if (seenError)
      return success();
    seenError = true;
    return failure();
  });
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &ctx);
  if (!module)
    return llvm::createStringError("cannot parse '" + path + "'");
  return module;
}

static_assert(kDynamicSize == ShapedType::kDynamic,
              "ArgSpec sizes use MLIR's dynamic size");

void mlir::gptq::registerToolDialects(DialectRegistry &registry) {
  registerAllDialects(registry);
  registerAllExtensions(registry);
  // Translations to LLVM IR of every dialect, the GPU and NVVM ones among
  // them, so that gpu-module-to-binary can serialize GPU kernels (PTX, cubin
  // through ptxas) in gptq-opt.
  registerAllToLLVMIRTranslations(registry);
  registry.insert<GPTQDialect, ukernel::UKernelDialect>();
}

namespace {
std::string typeString(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  type.print(os);
  return s;
}

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<ArgSpec> specOf(Type type, bool allowScalar,
                               const llvm::Twine &what) {
  ArgSpec spec;
  if (auto shaped = dyn_cast<ShapedType>(type)) {
    spec.isMemRef = isa<MemRefType>(type);
    if (!shaped.hasRank())
      return error(what + " has unranked type; ranked tensors or memrefs "
                          "are required");
    if (auto memref = dyn_cast<MemRefType>(type);
        memref && !memref.getLayout().isIdentity())
      return error(what + " is a memref with a non-identity layout");
    auto dtype = dtypeOfElementType(shaped.getElementType());
    if (!dtype)
      return error(what + " has unsupported element type " +
                   llvm::Twine(typeString(shaped.getElementType())));
    // No .npy dtype holds bfloat16: such a result could not be written.
    if (*dtype == DType::BF16 && !allowScalar)
      return error(what + " has element type bf16, which no .npy file "
                          "holds; return f32 (arith.extf) instead");
    spec.dtype = *dtype;
    spec.shape.assign(shaped.getShape().begin(), shaped.getShape().end());
    return spec;
  }
  auto dtype = dtypeOfElementType(type);
  if (dtype == DType::F16 || dtype == DType::BF16)
    dtype.reset();
  if (!dtype || !allowScalar)
    return error(what + " has unsupported type " +
                 llvm::Twine(typeString(type)) +
                 (allowScalar ? "" : " (results must be tensors or memrefs)"));
  spec.dtype = *dtype;
  spec.scalar = true;
  return spec;
}

/// Whether every op of the module is already in the LLVM dialect.
bool isLLVMModule(ModuleOp module) {
  bool onlyLLVM = true;
  module.walk([&](Operation *op) {
    if (op != module.getOperation() &&
        !isa<LLVM::LLVMDialect>(op->getDialect()))
      onlyLLVM = false;
  });
  return onlyLLVM;
}

/// "file:line:col: " for a location that has a file position, else "".
std::string where(Location loc) {
  if (auto file = loc->findInstanceOf<FileLineColLoc>())
    return llvm::formatv("{0}:{1}:{2}: ", file.getFilename().getValue(),
                         file.getLine(), file.getColumn())
        .str();
  return "";
}

/// The size in bytes of a value of `type`, counting its static sizes only
/// (a dynamic size counts as 1); nullopt when it overflows int64_t.
std::optional<int64_t> staticByteSize(Type type) {
  if (auto shaped = dyn_cast<ShapedType>(type)) {
    if (!shaped.hasRank())
      return staticByteSize(shaped.getElementType());
    SmallVector<int64_t> dims;
    for (int64_t d : shaped.getShape())
      dims.push_back(ShapedType::isDynamic(d) ? 1 : d);
    std::optional<int64_t> element = staticByteSize(shaped.getElementType());
    if (!element)
      return std::nullopt;
    return checkedByteCount(dims, *element);
  }
  if (auto complex = dyn_cast<ComplexType>(type)) {
    std::optional<int64_t> part = staticByteSize(complex.getElementType());
    return part ? llvm::checkedMul<int64_t>(*part, 2) : std::nullopt;
  }
  if (type.isIntOrFloat())
    return std::max<int64_t>(1, (type.getIntOrFloatBitWidth() + 7) / 8);
  return 8; // index, pointers, and the rest: at most a word.
}

/// An error naming the first tensor, memref or vector type in the module
/// (in an op's operands, results, block arguments or attributes, such as a
/// function's signature or a constant's value) whose static size in bytes
/// overflows int64_t: the lowering computes sizes in 64-bit arithmetic,
/// which would wrap into a too-small allocation.
llvm::Error checkTypeSizes(ModuleOp module) {
  std::string message;
  auto check = [&](Operation *op, Type type) {
    type.walk([&](Type t) {
      if (message.empty() && isa<ShapedType>(t) && !staticByteSize(t))
        message = where(op->getLoc()) + "'" +
                  op->getName().getStringRef().str() + "' uses the type " +
                  typeString(t) +
                  ", whose size in bytes overflows a 64-bit integer";
    });
  };
  module->walk([&](Operation *op) {
    if (!message.empty())
      return WalkResult::interrupt();
    for (Type t : op->getResultTypes())
      check(op, t);
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          check(op, arg.getType());
    op->getAttrDictionary().walk([&](Type t) { check(op, t); });
    return WalkResult::advance();
  });
  if (message.empty())
    return llvm::Error::success();
  return error(message);
}

/// Captures diagnostics emitted while lowering into one message.
struct DiagnosticCollector {
  explicit DiagnosticCollector(MLIRContext *ctx)
      : handler(ctx, [this](Diagnostic &diag) {
          llvm::raw_string_ostream os(text);
          os << where(diag.getLocation()) << "error: " << diag << "\n";
          for (Diagnostic &note : diag.getNotes())
            os << where(note.getLocation()) << "note: " << note << "\n";
          return success();
        }) {}
  std::string text;
  ScopedDiagnosticHandler handler;
};
} // namespace

namespace {
/// The command-line options shared by the tools that compile. They exist
/// (and appear in --help) only in tools that ask for them.
struct JitCommandLine {
  llvm::cl::OptionCategory category{"Compilation options"};
  llvm::cl::opt<bool> noCache{
      "no-cache",
      llvm::cl::desc("Compile afresh and keep nothing (by default compiled "
                     "code is cached in $GPTQ_MLIR_CACHE_DIR, else "
                     "~/.cache/gptq-mlir; GPTQ_MLIR_CACHE_DIR=off disables "
                     "the cache)"),
      llvm::cl::cat(category)};
  llvm::cl::opt<std::string> kernels{
      "kernels",
      llvm::cl::desc("Kernels of the gptq ops' lowering: cpu (default), the "
                     "CPU schedule's tuned ones; portable, the plain linalg "
                     "kernels that the GPU pipeline maps, here run on the "
                     "CPU (much slower: for checking them against the "
                     "reference)"),
      llvm::cl::init("cpu"), llvm::cl::cat(category)};
  llvm::cl::opt<std::string> cpuIsa{
      "cpu-isa",
      llvm::cl::desc("The instruction set the CPU kernels are written for "
                     "and code is generated for: host (default, this "
                     "CPU's), generic (portable vector operations in the "
                     "kernels), avx2, avx512 or avx512-vnni; one this CPU "
                     "lacks is an error (for testing another CPU's code)"),
      llvm::cl::init("host"), llvm::cl::cat(category)};
  llvm::cl::opt<std::string> byteDots{
      "byte-dots",
      llvm::cl::desc("The 4-bit decode kernel for groups of 128 columns: "
                     "auto (default: byte dot products where the instruction "
                     "set has AVX-512 VNNI, table lookups elsewhere), on "
                     "(byte dot products, in portable operations without "
                     "VNNI: for testing them on any CPU) or off"),
      llvm::cl::init("auto"), llvm::cl::cat(category)};
};

JitCommandLine &jitCommandLine() {
  static JitCommandLine options;
  return options;
}
} // namespace

llvm::cl::OptionCategory &mlir::gptq::jitOptionCategory() {
  return jitCommandLine().category;
}

JitOptions mlir::gptq::jitOptionsFromCommandLine(llvm::StringRef toolName) {
  JitOptions options;
  options.toolName = toolName.str();
  if (!jitCommandLine().noCache)
    options.cacheDir = defaultCacheDir();
  options.kernels = jitCommandLine().kernels;
  options.cpuIsa = jitCommandLine().cpuIsa;
  options.byteDots = jitCommandLine().byteDots;
  return options;
}

CompiledCode::~CompiledCode() {
  if (write)
    write->wait();
  if (library)
    dlclose(library);
}

CompiledFunction::~CompiledFunction() = default;

namespace {
/// Replaces the static constructors of `m` (llvm.global_ctors: those of
/// compiled GPU code register its kernel binaries) by one exported function,
/// gptq_module_init, that calls them in their order once. Constructors do not
/// survive into an object of the JIT's (the JIT keeps them to run itself), so
/// a cached library or an executable made from one would launch kernels from
/// modules never registered; every loader calls gptq_module_init instead.
/// Returns whether `m` had constructors.
bool exportModuleInitializer(llvm::Module &m) {
  llvm::GlobalVariable *ctors = m.getNamedGlobal("llvm.global_ctors");
  if (!ctors)
    return false;
  std::vector<std::pair<uint64_t, llvm::Function *>> list;
  if (ctors->hasInitializer())
    if (auto *array =
            llvm::dyn_cast<llvm::ConstantArray>(ctors->getInitializer()))
      for (llvm::Value *op : array->operands()) {
        auto *entry = llvm::dyn_cast<llvm::ConstantStruct>(op);
        if (!entry || entry->getNumOperands() < 2)
          continue;
        auto *priority =
            llvm::dyn_cast<llvm::ConstantInt>(entry->getOperand(0));
        auto *fn = llvm::dyn_cast<llvm::Function>(
            entry->getOperand(1)->stripPointerCasts());
        if (priority && fn)
          list.push_back({priority->getZExtValue(), fn});
      }
  std::stable_sort(list.begin(), list.end(), [](const auto &a, const auto &b) {
    return a.first < b.first;
  });
  ctors->eraseFromParent();
  llvm::LLVMContext &ctx = m.getContext();
  llvm::Type *i1 = llvm::Type::getInt1Ty(ctx);
  auto *done = new llvm::GlobalVariable(
      m, i1, /*isConstant=*/false, llvm::GlobalValue::InternalLinkage,
      llvm::ConstantInt::getFalse(ctx), "__gptq_module_initialized");
  llvm::Function *init = llvm::Function::Create(
      llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), false),
      llvm::GlobalValue::ExternalLinkage, kModuleInit, m);
  auto *entry = llvm::BasicBlock::Create(ctx, "entry", init);
  auto *run = llvm::BasicBlock::Create(ctx, "run", init);
  auto *exit = llvm::BasicBlock::Create(ctx, "exit", init);
  llvm::IRBuilder<> b(entry);
  b.CreateCondBr(b.CreateLoad(i1, done), exit, run);
  b.SetInsertPoint(run);
  b.CreateStore(llvm::ConstantInt::getTrue(ctx), done);
  for (auto &item : list)
    b.CreateCall(item.second);
  b.CreateBr(exit);
  b.SetInsertPoint(exit);
  b.CreateRetVoid();
  return true;
}

/// Removes the packed wrappers (`_mlir_<name>`, taking `void **`) that the
/// ExecutionEngine writes for every function of the module, but those in
/// `keep`: only the entries' are ever called. Each other one would be optimized
/// and code-generated for nothing, and the wrapper of an entry that takes its
/// weights as arguments (hundreds of memref descriptors, unpacked in one
/// block) costs seconds of instruction selection.
void eraseUnusedPackedWrappers(llvm::Module &m,
                               llvm::ArrayRef<std::string> keep) {
  std::vector<llvm::Function *> unused;
  for (llvm::Function &f : m) {
    llvm::StringRef name = f.getName();
    if (f.isDeclaration() || llvm::is_contained(keep, name) ||
        !name.consume_front("_mlir_"))
      continue;
    llvm::Function *wrapped = m.getFunction(name);
    if (wrapped && !wrapped->isDeclaration() && f.use_empty())
      unused.push_back(&f);
  }
  for (llvm::Function *f : unused)
    f->eraseFromParent();
}

/// What the options say the code is compiled for.
struct CompileTarget {
  CpuIsa isa;
  /// Whether the options named the instruction set (not the host's).
  bool explicitIsa;
  bool cuda;
  /// The GPU's chip, with cuda: the options' or the device's.
  std::string chip;
};

/// Checks the options' kernels, device, instruction set and byte dots, and
/// resolves the target; without a usable GPU for cuda, the driver's reason
/// is the error.
llvm::Expected<CompileTarget> resolveTarget(const JitOptions &options) {
  if (options.kernels != "cpu" && options.kernels != "portable")
    return error("unknown kernels '" + options.kernels +
                 "' (expected cpu or portable)");
  if (llvm::Error err = checkDeviceName(options.device))
    return std::move(err);
  // The instruction set of the CPU kernels and of the generated code: the
  // host's, or one it has (a test of another CPU's code).
  std::optional<CpuIsa> isa = resolveCpuIsaOption(options.cpuIsa);
  if (!isa)
    return error("unknown CPU instruction set '" + options.cpuIsa +
                 "' (expected " + kHostCpuIsa + ", " + cpuIsaNames() + ")");
  if (!cpuIsaRuns(hostCpuIsa(), *isa))
    return error("this CPU cannot run code for " + cpuIsaName(*isa) +
                 " (it has " + cpuIsaName(hostCpuIsa()) + ")");
  CompileTarget target{*isa, options.cpuIsa != kHostCpuIsa,
                       options.device == "cuda", options.chip};
  if (options.byteDots != "auto" && options.byteDots != "on" &&
      options.byteDots != "off")
    return error("byte dots must be auto, on or off, found '" +
                 options.byteDots + "'");
  if (target.cuda && target.chip.empty()) {
    char text[512];
    if (gptq_cuda_chip(text, sizeof(text)) != 0)
      return error(llvm::Twine("--device cuda: no usable GPU: ") + text);
    target.chip = text;
  }
  return target;
}

/// Makes the module's public functions other than `entries` private and
/// removes what only they reach (an imported model's prefill and decode
/// beside its forward): only what the entries reach is compiled.
llvm::Error keepOnlyEntries(ModuleOp module,
                            llvm::ArrayRef<std::string> entries) {
  for (auto func : module.getOps<func::FuncOp>())
    if (!llvm::is_contained(entries, func.getSymName()) && func.isPublic())
      func.setPrivate();
  PassManager dce(module.getContext());
  dce.addPass(createSymbolDCEPass());
  if (failed(dce.run(module)))
    return error("removing the functions the entry does not reach failed");
  return llvm::Error::success();
}

/// Adds the lowering to `pm`: the options' pipeline, else the NVVM or CPU
/// pipeline of the target.
void buildLowering(PassManager &pm, const JitOptions &options,
                   const CompileTarget &target) {
  if (options.pipeline) {
    options.pipeline(pm);
  } else if (target.cuda || options.device == "cuda-emulated") {
    NVVMPipelineOptions pipelineOptions;
    if (options.choleskyBlock)
      pipelineOptions.choleskyBlock = *options.choleskyBlock;
    if (options.tensorCores)
      pipelineOptions.tensorCores = *options.tensorCores;
    if (!target.chip.empty())
      pipelineOptions.chip = target.chip;
    pipelineOptions.emulate = !target.cuda;
    buildNVVMPipeline(pm, pipelineOptions);
  } else {
    CPUPipelineOptions pipelineOptions;
    if (options.choleskyBlock)
      pipelineOptions.choleskyBlock = *options.choleskyBlock;
    pipelineOptions.kernels = options.kernels;
    pipelineOptions.cpuIsa = cpuIsaName(target.isa).str();
    pipelineOptions.byteDots = options.byteDots;
    buildCPUPipeline(pm, pipelineOptions);
  }
}

/// The target machine of the generated code: the host's, or the generic
/// CPU of an instruction set the options name; position-independent, so
/// that the same object can become a cached shared library.
llvm::Expected<llvm::orc::JITTargetMachineBuilder>
targetMachineBuilder(const CompileTarget &target) {
  auto tmBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!tmBuilder)
    return tmBuilder.takeError();
  tmBuilder->setRelocationModel(llvm::Reloc::PIC_);
  if (target.explicitIsa && !cpuNameForIsa(target.isa).empty()) {
    tmBuilder->setCPU(cpuNameForIsa(target.isa).str());
    tmBuilder->getFeatures() = llvm::SubtargetFeatures();
    if (!cpuFeaturesForIsa(target.isa).empty())
      tmBuilder->addFeatures({cpuFeaturesForIsa(target.isa).str()});
  }
  return std::move(*tmBuilder);
}

/// The entry flags (kEntry*) of a lowered module: results are released
/// with the allocator that made them.
uint64_t loweredEntryFlags(ModuleOp module) {
  return (module.lookupSymbol("_mlir_memref_to_llvm_alloc") ||
                  module.lookupSymbol("_mlir_memref_to_llvm_aligned_alloc")
              ? kEntryRuntimeAllocator
              : 0) |
         (module.lookupSymbol("mgpuMemAlloc") ? kEntryManagedResults : 0);
}

/// Registers the translations to LLVM IR in the module's context and checks
/// that the module translates: a pipeline given by the caller may stop
/// short of that.
llvm::Error checkTranslatable(ModuleOp module) {
  static bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)initialized;
  MLIRContext &ctx = *module.getContext();
  registerBuiltinDialectTranslation(ctx);
  registerLLVMDialectTranslation(ctx);
  registerOpenMPDialectTranslation(ctx);
  registerGPUDialectTranslation(ctx);
  registerNVVMDialectTranslation(ctx);
  Operation *untranslatable = nullptr;
  module->walk<WalkOrder::PreOrder>([&](Operation *op) {
    Dialect *dialect = op->getDialect();
    if (!untranslatable &&
        (!dialect ||
         !dialect->getRegisteredInterface<LLVMTranslationDialectInterface>()))
      untranslatable = op;
  });
  if (untranslatable)
    return error("lowering left '" + untranslatable->getName().getStringRef() +
                 "', which does not translate to LLVM IR");
  return llvm::Error::success();
}

/// The ExecutionEngine of the lowered module for `tm`, with the runtime
/// libraries (and CUDA's with `cuda`) and the object kept with
/// `keepObject`; `hasInit` tells, once code is generated, whether the
/// module has an initializer to run (kModuleInit).
llvm::Expected<std::unique_ptr<ExecutionEngine>>
createEngine(ModuleOp module, std::unique_ptr<llvm::TargetMachine> tm,
             const JitOptions &options, bool cuda, bool keepObject,
             ArrayRef<std::string> packedNames, std::shared_ptr<bool> hasInit) {
  auto optimize =
      makeOptimizingTransformer(options.optLevel, /*sizeLevel=*/0, tm.get());
  // The kernels hold register tiles of 512-bit vectors; without these
  // attributes the X86 backend splits them into 256-bit halves on CPUs that
  // prefer 256-bit vectors, and the tiles spill.
  llvm::StringRef features = tm->getTargetFeatureString();
  bool avx512 = features.contains("+avx512f");
  auto transformer = [optimize, avx512, hasInit,
                      packedNames = std::vector<std::string>(packedNames)](
                         llvm::Module *m) -> llvm::Error {
    *hasInit = exportModuleInitializer(*m) || *hasInit;
    eraseUnusedPackedWrappers(*m, packedNames);
    // A model's layers repeat the same loops, each outlined by the OpenMP
    // translation into a function of its own: identical ones become one
    // before they are optimized and code-generated, once.
    llvm::MergeFunctionsPass::runOnModule(*m);
    if (avx512)
      keepWideVectors(*m);
    return optimize(m);
  };
  ExecutionEngineOptions engineOptions;
  engineOptions.transformer = transformer;
  engineOptions.enableObjectDump = keepObject;
  engineOptions.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  // LLVM's perf listener writes a jitdump file and a folder of IR under
  // $JITDUMPDIR or $HOME/.debug/jit for every engine, and never removes
  // them: files no user asked for, one set per compile with the cache off.
  engineOptions.enablePerfNotificationListener = false;
  SmallVector<StringRef> libs;
  for (const char *lib : kRuntimeLibraries)
    if (std::strlen(lib))
      libs.push_back(lib);
  if (cuda)
    libs.push_back(GPTQ_CUDA_RUNTIME_LIBRARY);
  engineOptions.sharedLibPaths = libs;
  return ExecutionEngine::create(module, engineOptions, std::move(tm));
}

/// The packed wrappers of the entries' C interfaces `cifaceNames`: looking
/// them up materializes the module, so code generation happens here, not
/// in the first call. When the generated code says `hasInit` (createEngine),
/// runs the module's initializer, which registers the kernels of compiled
/// GPU code (no driver call: modules load at their first launch).
llvm::Expected<std::vector<void (*)(void **)>>
materializeEntries(ExecutionEngine &engine, ArrayRef<std::string> cifaceNames,
                   const std::shared_ptr<bool> &hasInit) {
  std::vector<void (*)(void **)> functions;
  for (const std::string &cifaceName : cifaceNames) {
    auto packed = engine.lookupPacked(cifaceName);
    if (!packed)
      return packed.takeError();
    functions.push_back(*packed);
  }
  if (*hasInit) {
    auto init = engine.lookup(kModuleInit);
    if (!init)
      return init.takeError();
    reinterpret_cast<void (*)()> (*init)();
  }
  return functions;
}

/// The compiled object of `engine`.
llvm::Expected<std::string> compiledObject(ExecutionEngine &engine) {
  // The engine writes its object only to a named file, and fails hard when
  // that write fails: an in-memory file receives it, so that a full disk
  // meets our own, checked writes instead.
  int fd = ::memfd_create("gptq-object", 0);
  if (fd < 0)
    return error("cannot hold the compiled object in memory");
  engine.dumpToObjectFile("/proc/self/fd/" + std::to_string(fd));
  std::string object;
  {
    auto buffer = llvm::MemoryBuffer::getOpenFile(
        fd, "object", /*FileSize=*/-1, /*RequiresNullTerminator=*/false);
    if (buffer)
      object = (*buffer)->getBuffer().str();
    ::close(fd);
  }
  if (object.empty())
    return error("the compiled object could not be kept");
  return object;
}

/// Keeps the engine's object as a shared library at `slot` for later runs,
/// linked while the caller goes on (CompiledCode waits for it); a failure
/// is a warning.
std::shared_ptr<CacheWrite> startCacheWrite(ExecutionEngine &engine,
                                            const CacheSlot &slot,
                                            uint64_t entryFlags,
                                            const JitOptions &options) {
  auto object = compiledObject(engine);
  if (!object) {
    warnCacheUnwritable(options.toolName, options.cacheDir, object.takeError());
    return nullptr;
  }
  return writeCacheEntryInBackground(std::move(*object), slot.path.str().str(),
                                     slot.digest, entryFlags, options);
}

/// The engine's object given to the caller (options.object) and kept in
/// the cache at `slot` (unless its path is empty).
llvm::Error keepObject(CompiledCode &code, const CacheSlot &slot,
                       uint64_t entryFlags, const JitOptions &options) {
  if (options.object) {
    auto object = compiledObject(*code.engine);
    if (!object)
      return object.takeError();
    *options.object = std::move(*object);
  }
  if (!slot.path.empty())
    code.write = startCacheWrite(*code.engine, slot, entryFlags, options);
  return llvm::Error::success();
}

/// Each of `names` after `prefix`.
std::vector<std::string> prefixed(StringRef prefix,
                                  ArrayRef<std::string> names) {
  std::vector<std::string> result;
  for (const std::string &name : names)
    result.push_back((prefix + name).str());
  return result;
}
} // namespace

llvm::Expected<std::unique_ptr<CompiledFunction>>
CompiledFunction::compileSource(MLIRContext &context, llvm::StringRef source,
                                llvm::StringRef bufferName,
                                llvm::StringRef entry,
                                const JitOptions &options) {
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(source, ParserConfig(&context), bufferName);
  if (!module)
    return error("internal error: the generated module '" + bufferName +
                 "' does not parse");
  return compile(std::move(module), entry, options);
}

llvm::Expected<std::unique_ptr<CompiledFunction>>
CompiledFunction::compile(OwningOpRef<ModuleOp> module, llvm::StringRef entry,
                          const JitOptions &options) {
  auto fns = compileEntries(std::move(module), {entry.str()}, options);
  if (!fns)
    return fns.takeError();
  return std::move((*fns)[0]);
}

llvm::Expected<std::vector<std::unique_ptr<CompiledFunction>>>
CompiledFunction::createEntries(ModuleOp module,
                                llvm::ArrayRef<std::string> entries,
                                const std::shared_ptr<CompiledCode> &code) {
  std::vector<std::unique_ptr<CompiledFunction>> fns;
  for (const std::string &entry : entries) {
    if (llvm::any_of(fns, [&](auto &fn) { return fn->packed.name == entry; }))
      return error("entry '" + entry + "' given twice");
    std::unique_ptr<CompiledFunction> fn(new CompiledFunction());
    fn->packed.name = entry;
    fn->code = code;
    auto signature = entrySignature(module, entry);
    if (!signature)
      return signature.takeError();
    fn->packed.inputs = std::move(signature->inputs);
    fn->packed.results = std::move(signature->results);
    fns.push_back(std::move(fn));
  }
  return fns;
}

llvm::Expected<std::vector<std::unique_ptr<CompiledFunction>>>
CompiledFunction::compileEntries(OwningOpRef<ModuleOp> module,
                                 llvm::ArrayRef<std::string> entries,
                                 const JitOptions &options) {
  auto start = std::chrono::steady_clock::now();
  MLIRContext *ctx = module->getContext();
  if (entries.empty())
    return error("no entry to compile");
  if (options.object && entries.size() != 1)
    return error("an object file holds the code of one entry, not " +
                 llvm::Twine(entries.size()));
  auto code = std::make_shared<CompiledCode>();
  auto created = createEntries(*module, entries, code);
  if (!created)
    return created.takeError();
  std::vector<std::unique_ptr<CompiledFunction>> fns = std::move(*created);
  // gptq-export-entry-points (the pipeline's first pass) adds the C
  // interface to public functions and makes their tensor arguments
  // read-only, so calls need not copy the caller's arrays.

  auto target = resolveTarget(options);
  if (!target)
    return target.takeError();
  if (!isLLVMModule(*module))
    if (llvm::Error err = keepOnlyEntries(*module, entries))
      return std::move(err);
  if (llvm::Error err = checkTypeSizes(*module))
    return std::move(err);
  if (options.hoistWeights && !isLLVMModule(*module))
    for (auto &fn : fns)
      if (llvm::Error err = fn->hoistWeights(*module))
        return std::move(err);
  // The pass manager that lowers the module; a cache hit keyed on the
  // module before lowering never runs it.
  bool lowered = isLLVMModule(*module);
  PassManager pm(ctx);
  if (!lowered)
    buildLowering(pm, options, *target);
  auto tmBuilder = targetMachineBuilder(*target);
  if (!tmBuilder)
    return tmBuilder.takeError();

  // The C interface of each entry, and the packed wrapper the
  // ExecutionEngine (and the cached library) exports for it.
  std::vector<std::string> cifaceNames = prefixed("_mlir_ciface_", entries);
  std::vector<std::string> packedNames = prefixed("_mlir_", cifaceNames);
  bool cached = !options.cacheDir.empty() && !options.object;
  llvm::StringRef buildIdentity = compilerBuildIdentity();
  bool keyBeforeLowering =
      lowered || (!options.pipeline && !buildIdentity.empty());
  CacheSlot slot;
  // Records in each function how its results are released, from the
  // entry flags (kEntry*) of its lowering or of the cache entry.
  auto releaseResultsAs = [&](uint64_t flags) {
    for (auto &fn : fns) {
      fn->packed.runtimeAllocator = flags & kEntryRuntimeAllocator;
      if (flags & kEntryManagedResults)
        fn->packed.freeResult = gptq_cuda_free_managed;
    }
  };
  // Sets each function's compile time, when its code is ready.
  auto finish = [&]() {
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    for (auto &fn : fns)
      fn->compileTime = seconds;
    return std::move(fns);
  };
  // Looks the module up in the cache as it is now: true when its code was
  // loaded into `fns`.
  auto loadCached = [&]() -> bool {
    std::string text =
        cacheKeyText(*module, pm, lowered, buildIdentity, *tmBuilder,
                     options.optLevel, llvm::join(entries, ","),
                     target->cuda ? GPTQ_CUDA_RUNTIME_LIBRARY : "");
    std::optional<CachedCode> cachedCode =
        lookUpCache(text, options.cacheDir, entries.front(), packedNames, slot);
    if (!cachedCode)
      return false;
    code->library = cachedCode->library;
    for (auto [fn, function] : llvm::zip_equal(fns, cachedCode->functions))
      fn->packed.function = function;
    releaseResultsAs(cachedCode->flags);
    return true;
  };
  if (cached && keyBeforeLowering && loadCached())
    return finish();

  if (!lowered) {
    DiagnosticCollector diags(ctx);
    if (failed(pm.run(*module)))
      return error("lowering to LLVM failed:\n" + diags.text);
    for (auto &fn : fns)
      fn->markWeightsReadOnly(*module);
  }
  uint64_t entryFlags = loweredEntryFlags(*module);
  releaseResultsAs(entryFlags);
  if (llvm::Error err = checkTranslatable(*module))
    return std::move(err);
  if (cached && !keyBeforeLowering && loadCached())
    return finish();
  auto tm = tmBuilder->createTargetMachine();
  if (!tm)
    return tm.takeError();
  auto hasInit = std::make_shared<bool>(false);
  auto engine =
      createEngine(*module, std::move(*tm), options, target->cuda,
                   !slot.path.empty() || options.object, packedNames, hasInit);
  if (!engine)
    return engine.takeError();
  code->engine = std::move(*engine);
  auto functions = materializeEntries(*code->engine, cifaceNames, hasInit);
  if (!functions)
    return functions.takeError();
  for (auto [fn, function] : llvm::zip_equal(fns, *functions))
    fn->packed.function = function;

  if (llvm::Error err = keepObject(*code, slot, entryFlags, options))
    return std::move(err);
  return finish();
}

llvm::Error CompiledFunction::hoistWeights(ModuleOp module) {
  auto func = module.lookupSymbol<func::FuncOp>(packed.name);
  // A call of the entry would not pass the new arguments.
  if (!func || func.isExternal() ||
      !SymbolTable::symbolKnownUseEmpty(func, module))
    return llvm::Error::success();
  SmallVector<arith::ConstantOp> constants;
  func.walk([&](arith::ConstantOp op) { constants.push_back(op); });
  llvm::DenseMap<Attribute, BlockArgument> arguments;
  for (arith::ConstantOp op : constants) {
    auto type = dyn_cast<RankedTensorType>(op.getType());
    if (!type || !type.hasStaticShape() || type.getEncoding())
      continue;
    bool seesArguments = true;
    for (Operation *p = op->getParentOp(); p != func; p = p->getParentOp())
      seesArguments &= !p->hasTrait<OpTrait::IsIsolatedFromAbove>();
    std::optional<DType> dtype = dtypeOfElementType(type.getElementType());
    if (!seesArguments || !dtype || *dtype == DType::Bool ||
        type.getElementType().isIndex())
      continue;
    std::optional<int64_t> bytes =
        checkedByteCount(type.getShape(), dtypeSize(*dtype));
    if (!bytes)
      continue;
    // Resources whatever their size; inline constants from kWeightBytes.
    Attribute value = op.getValue();
    auto elements = dyn_cast<ElementsAttr>(value);
    std::optional<ArrayRef<char>> raw =
        elements ? rawElementData(elements) : std::nullopt;
    if (!raw ||
        (isa<DenseIntOrFPElementsAttr>(value) && *bytes < kWeightBytes) ||
        static_cast<int64_t>(raw->size()) != *bytes)
      continue;
    ArrayRef<char> data = *raw;
    auto [it, inserted] = arguments.try_emplace(value);
    if (inserted) {
      Weight weight;
      weight.dtype = *dtype;
      weight.shape.assign(type.getShape().begin(), type.getShape().end());
      weight.data = data.data();
      // A parameter archive's tensor (an immutable blob over the mapped
      // file: a checkpoint's safetensors align tensors only to their
      // elements) is read in place when its elements are aligned, so that
      // the weights are not copied; other constants are copied to a cache
      // line unless they start on one (the hex blobs of a text module are
      // 4-byte aligned, and read unaligned they slow the forward).
      auto resource = dyn_cast<DenseResourceElementsAttr>(value);
      AsmResourceBlob *blob =
          resource ? resource.getRawHandle().getBlob() : nullptr;
      size_t needed = blob && !blob->isMutable()
                          ? std::max<size_t>(dtypeSize(*dtype), 1)
                          : kWeightAlignment;
      if (reinterpret_cast<uintptr_t>(data.data()) % needed) {
        size_t size =
            llvm::alignTo(std::max<size_t>(data.size(), 1), kWeightAlignment);
        weight.copy.reset(
            static_cast<char *>(std::aligned_alloc(kWeightAlignment, size)));
        if (!weight.copy)
          return error("out of memory for a copy of a weight (" +
                       llvm::Twine(data.size()) + " bytes)");
        std::memcpy(weight.copy.get(), data.data(), data.size());
        weight.data = weight.copy.get();
      }
      weights.push_back(std::move(weight));
      unsigned index = func.getNumArguments();
      if (failed(func.insertArgument(index, type, {}, op.getLoc())))
        llvm::report_fatal_error("cannot add an argument to the entry");
      it->second = func.getArgument(index);
    }
    op.replaceAllUsesWith(it->second);
    op.erase();
  }
  for (const Weight &w : weights)
    hiddenWeights.push_back({w.data, w.shape});
  return llvm::Error::success();
}

void CompiledFunction::markWeightsReadOnly(ModuleOp module) {
  auto func = module.lookupSymbol<LLVM::LLVMFuncOp>(packed.name);
  if (weights.empty() || !func)
    return;
  // The lowered entry takes each memref as its descriptor's fields
  // (allocated and aligned pointers, offset, sizes, strides) and each scalar
  // as itself; the weights come last.
  unsigned expected = 0;
  for (const ArgSpec &spec : packed.inputs)
    expected += spec.scalar ? 1 : 3 + 2 * spec.shape.size();
  unsigned first = expected;
  for (const Weight &w : weights)
    expected += 3 + 2 * w.shape.size();
  if (func.getNumArguments() != expected)
    return;
  // Nothing writes a weight, and no other pointer reaches it during a call:
  // saying so lets LLVM keep values in registers across stores to other
  // buffers, as it does with the constant global a weight would otherwise
  // be.
  Builder b(module.getContext());
  for (unsigned i = 0, at = first; i < weights.size();
       at += 3 + 2 * weights[i].shape.size(), ++i) {
    func.setArgAttr(at + 1, LLVM::LLVMDialect::getNoAliasAttrName(),
                    b.getUnitAttr());
    func.setArgAttr(at + 1, LLVM::LLVMDialect::getReadonlyAttrName(),
                    b.getUnitAttr());
  }
}

llvm::Expected<std::vector<NpyArray>>
CompiledFunction::call(const std::vector<NpyArray> &args,
                       const std::vector<std::string> &names,
                       bool writeMemRefsInPlace) const {
  return callPackedEntry(packed, hiddenWeights, args, names,
                         writeMemRefsInPlace);
}

llvm::Expected<EntrySignature>
mlir::gptq::entrySignature(ModuleOp module, llvm::StringRef entry) {
  EntrySignature result;
  FunctionType signature;
  if (auto func = module.lookupSymbol<func::FuncOp>(entry)) {
    if (func.isExternal())
      return error("entry function '" + entry + "' has no body");
    if (func.isPrivate())
      return error("entry function '" + entry + "' is private");
    signature = func.getFunctionType();
  } else if (auto llvmFunc = module.lookupSymbol<LLVM::LLVMFuncOp>(entry)) {
    auto attr = llvmFunc->getAttrOfType<TypeAttr>("gptq.signature");
    if (!attr || !isa<FunctionType>(attr.getValue()) ||
        !llvmFunc->hasAttr("llvm.emit_c_interface"))
      return error("entry '" + entry +
                   "' is an llvm.func without its original signature: lower "
                   "the module with gptq-opt --gptq-lower-to-cpu-pipeline, "
                   "which keeps it in a gptq.signature attribute");
    signature = cast<FunctionType>(attr.getValue());
  } else {
    std::string names;
    module.walk([&](FunctionOpInterface f) {
      if (!f.isExternal())
        names += (names.empty() ? "" : ", ") + f.getName().str();
    });
    return error("no function '" + entry + "' in the module" +
                 (names.empty() ? "" : " (functions: " + names + ")"));
  }
  for (auto [i, t] : llvm::enumerate(signature.getInputs())) {
    auto spec = specOf(t, /*allowScalar=*/true,
                       "argument #" + llvm::Twine(i) + " of '" + entry + "'");
    if (!spec)
      return spec.takeError();
    result.inputs.push_back(*spec);
  }
  for (auto [i, t] : llvm::enumerate(signature.getResults())) {
    auto spec = specOf(t, /*allowScalar=*/false,
                       "result #" + llvm::Twine(i) + " of '" + entry + "'");
    if (!spec)
      return spec.takeError();
    result.results.push_back(*spec);
  }
  return result;
}

std::vector<std::string> mlir::gptq::entryNames(ModuleOp module) {
  std::vector<std::string> names;
  for (Operation &op : module.getBody()->getOperations()) {
    if (auto func = dyn_cast<func::FuncOp>(op)) {
      if (func.isPublic() && !func.isExternal())
        names.push_back(func.getSymName().str());
    } else if (auto llvmFunc = dyn_cast<LLVM::LLVMFuncOp>(op)) {
      // The lowering copies the attribute onto the C interface wrapper,
      // which is how an entry is called, not an entry itself.
      if (llvmFunc->hasAttr("gptq.signature") &&
          !llvmFunc.getSymName().starts_with("_mlir_ciface_"))
        names.push_back(llvmFunc.getSymName().str());
    }
  }
  return names;
}

std::string mlir::gptq::defaultEntryName(ModuleOp module) {
  if (!module.lookupSymbol("main"))
    if (std::vector<std::string> names = entryNames(module); names.size() == 1)
      return names.front();
  return "main";
}

std::optional<ArrayRef<char>> mlir::gptq::rawElementData(ElementsAttr attr) {
  if (auto dense = dyn_cast<DenseIntOrFPElementsAttr>(attr)) {
    if (dense.isSplat())
      return std::nullopt;
    return dense.getRawData();
  }
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr))
    if (AsmResourceBlob *blob = resource.getRawHandle().getBlob())
      return blob->getData();
  return std::nullopt;
}

std::optional<DType> mlir::gptq::dtypeOfElementType(Type type) {
  if (type.isF32())
    return DType::F32;
  if (type.isF16())
    return DType::F16;
  if (type.isBF16())
    return DType::BF16;
  if (type.isF64())
    return DType::F64;
  if (type.isInteger(1))
    return DType::Bool;
  if (type.isInteger(8))
    return DType::I8;
  if (type.isInteger(16))
    return DType::I16;
  if (type.isInteger(32))
    return DType::I32;
  if (type.isInteger(64) || type.isIndex())
    return DType::I64;
  return std::nullopt;
}
