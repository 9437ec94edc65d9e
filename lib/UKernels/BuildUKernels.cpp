//===- BuildUKernels.cpp - Compile the microkernel library at build time --===//
//
// gptq-build-ukernels compiles a file of microkernel wrappers (Matmul.mlir,
// LayerKernels.mlir) with
// the kernels it calls through the CPU pipeline, for one instruction set and
// form, into an object file: the build runs it once per variant and links
// the objects into libGPTQUKernels.so and libGPTQAotUKernels.a. Code
// generation is the JIT's: O3, the instruction set's CPU, position-
// independent code, 512-bit vectors where the set has AVX-512.
//
//===----------------------------------------------------------------------===//

#include "gptq/Codegen/CPU/CpuIsa.h"
#include "gptq/Codegen/CPU/UKernelAbi.h"
#include "gptq/Conversion/Library.h"
#include "gptq/Dialect/GPTQ/IR/GPTQ.h"
#include "gptq/Dialect/UKernel/IR/UKernel.h"
#include "gptq/Pipelines/Pipelines.h"

#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;
using namespace mlir::gptq;
namespace cl = llvm::cl;

static cl::opt<std::string> source(cl::Positional, cl::Required,
                                   cl::desc("<wrapper .mlir>"));
static cl::opt<std::string> output("o", cl::Required,
                                   cl::desc("The object file to write"));
static cl::opt<std::string> isaName("isa", cl::Required,
                                    cl::desc("The instruction set: generic, "
                                             "avx2, avx512 or avx512-vnni"));
enum class Emit { Object, MLIR, LLVM };
static cl::opt<Emit> emit(
    "emit", cl::init(Emit::Object), cl::desc("What to write:"),
    cl::values(clEnumValN(Emit::Object, "object", "the object file (default)"),
               clEnumValN(Emit::MLIR, "mlir",
                          "the module lowered to the LLVM dialect"),
               clEnumValN(Emit::LLVM, "llvm", "the optimized LLVM IR")));
static cl::opt<bool> byteDots("byte-dots", cl::init(false),
                              cl::desc("The 4-bit decode step with byte dot "
                                       "products (else table lookups)"));

static int fail(const llvm::Twine &message) {
  llvm::errs() << "gptq-build-ukernels: error: " << message << "\n";
  return 1;
}

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Renames each wrapper of `module` to its variant's symbol (checking it
/// against UKernelAbi.h) and records the symbols in `exported`: nothing
/// else in the file is exported.
static llvm::Error exportWrappers(ModuleOp module, CpuIsa isa,
                                  llvm::StringSet<> &exported) {
  MLIRContext *ctx = module.getContext();
  // Each wrapper has its kernel's signature in the calling convention and
  // takes the variant's name.
  struct Kernel {
    StringRef wrapper;
    FunctionType type;
    std::string symbol;
  };
  Kernel kernels[] = {{"gptq_uk_matmul", ukernelMatmulType(ctx),
                       ukernelMatmulSymbol({isa, byteDots})},
                      {"gptq_uk_damped_cholesky", ukernelCholeskyType(ctx),
                       ukernelSymbol("damped_cholesky", isa)},
                      {"gptq_uk_quantize_blocks", ukernelQuantizeType(ctx),
                       ukernelSymbol("quantize_blocks", isa)}};
  for (auto fn : llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
    if (!fn.getSymName().starts_with("gptq_uk_"))
      continue;
    const Kernel *kernel = llvm::find_if(
        kernels, [&](const Kernel &k) { return k.wrapper == fn.getSymName(); });
    if (kernel == std::end(kernels))
      return error("@" + fn.getSymName() + " in '" + source +
                   "' is not a microkernel of UKernelAbi.h");
    if (fn.getFunctionType() != kernel->type)
      return error("@" + fn.getSymName() + " in '" + source +
                   "' does not have the signature of UKernelAbi.h");
    fn.setSymName(kernel->symbol);
    // Library code: no model-level rewrite touches it (the kernels are
    // inlined into it below).
    fn->setAttr(kLibraryFunctionAttr, UnitAttr::get(ctx));
    exported.insert(kernel->symbol);
  }
  if (exported.empty())
    return error("'" + source + "' has no microkernel (@gptq_uk_*)");
  return llvm::Error::success();
}

/// Links the kernels the wrappers call into `module`, in the forms of the
/// variant, inlines them and lowers the module through the CPU pipeline.
static llvm::Error lowerWithKernels(ModuleOp module, CpuIsa isa) {
  MLIRContext *ctx = module.getContext();
  if (failed(addLibraryFunctions(module, LibraryKernels::CPU,
                                 CpuKernelForms{isa, byteDots})) ||
      failed(verify(module)))
    return error("the kernels of '" + source + "' do not link");

  // The kernels inline into the wrappers first, so that the buffers the
  // wrappers write their results into (materialize_in_destination) can
  // replace the kernels' own result allocations (eliminate-empty-tensors):
  // the results are computed in place, not copied.
  PassManager inline_(ctx);
  inline_.addPass(createInlinerPass());
  inline_.addPass(createCanonicalizerPass());
  inline_.addPass(bufferization::createEmptyTensorEliminationPass());
  if (failed(inline_.run(module)))
    return error("inlining the kernels of '" + source + "' failed");

  PassManager pm(ctx);
  CPUPipelineOptions options;
  options.cpuIsa = cpuIsaName(isa).str();
  options.byteDots = byteDots ? "on" : "off";
  // The kernels have no layers: any repeated stretch of their ops stays
  // inline.
  options.outlineLayers = false;
  buildCPUPipeline(pm, options);
  if (failed(pm.run(module)))
    return error("lowering '" + source + "' for " + isaName + " failed");
  return llvm::Error::success();
}

/// The target machine of the instruction set's generic CPU (for
/// `generic`, the target's): position-independent, optimizing fully.
static llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(CpuIsa isa, const llvm::Triple &triple) {
  std::string message;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, message);
  if (!target)
    return error("no target for " + triple.str() + ": " + message);
  std::string cpu = cpuNameForIsa(isa).str();
  if (cpu.empty())
    cpu = triple.isX86() ? "x86-64" : "generic";
  llvm::TargetOptions targetOptions;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpu, cpuFeaturesForIsa(isa), targetOptions, llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!tm)
    return error("no target machine for " + cpu);
  return std::move(tm);
}

/// Readies the translated module for the target machine and optimizes it,
/// with only the `exported` symbols exported.
static llvm::Error optimizeForTarget(llvm::Module &llvmModule, CpuIsa isa,
                                     llvm::TargetMachine &tm,
                                     const llvm::Triple &triple,
                                     const llvm::StringSet<> &exported) {
  llvmModule.setTargetTriple(triple);
  llvmModule.setDataLayout(tm.createDataLayout());
  // Register tiles of 512-bit vectors stay whole (as the JIT keeps them).
  if (isa >= CpuIsa::AVX512)
    keepWideVectors(llvmModule);
  for (llvm::Function &f : llvmModule)
    if (!f.isDeclaration() && !exported.contains(f.getName()))
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
  auto optimize = makeOptimizingTransformer(3, /*sizeLevel=*/0, &tm);
  if (llvm::Error err = optimize(&llvmModule))
    return error("optimizing failed: " + llvm::toString(std::move(err)));
  return llvm::Error::success();
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv,
                              "Compile a microkernel of the gptq-mlir "
                              "library into an object file\n");
  std::optional<CpuIsa> isa = parseCpuIsa(isaName);
  if (!isa)
    return fail("unknown instruction set '" + isaName + "' (" + cpuIsaNames() +
                ")");

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  registry.insert<GPTQDialect, ukernel::UKernelDialect>();
  MLIRContext ctx(registry);
  ctx.disableMultithreading();

  llvm::SourceMgr sourceMgr;
  auto file = llvm::MemoryBuffer::getFile(source);
  if (!file)
    return fail("cannot read '" + source + "'");
  sourceMgr.AddNewSourceBuffer(std::move(*file), llvm::SMLoc());
  // The kernels the wrapper calls are added below: it is verified once
  // they are there.
  ParserConfig config(&ctx, /*verifyAfterParse=*/false);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, config);
  if (!module)
    return fail("cannot parse '" + source + "'");
  llvm::StringSet<> exported;
  if (llvm::Error err = exportWrappers(*module, *isa, exported))
    return fail(llvm::toString(std::move(err)));
  if (llvm::Error err = lowerWithKernels(*module, *isa))
    return fail(llvm::toString(std::move(err)));

  std::error_code ec;
  auto out = std::make_unique<llvm::ToolOutputFile>(output, ec,
                                                    llvm::sys::fs::OF_None);
  if (ec)
    return fail("cannot write '" + output + "': " + ec.message());
  if (emit == Emit::MLIR) {
    module->print(out->os());
    out->keep();
    return 0;
  }

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::LLVMContext llvmCtx;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(*module, llvmCtx, llvm::sys::path::stem(output));
  if (!llvmModule)
    return fail("translating '" + source + "' to LLVM IR failed");
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  auto tm = createTargetMachine(*isa, triple);
  if (!tm)
    return fail(llvm::toString(tm.takeError()));
  if (llvm::Error err =
          optimizeForTarget(*llvmModule, *isa, **tm, triple, exported))
    return fail(llvm::toString(std::move(err)));
  if (emit == Emit::LLVM) {
    llvmModule->print(out->os(), nullptr);
    out->keep();
    return 0;
  }
  llvm::legacy::PassManager codegen;
  if ((*tm)->addPassesToEmitFile(codegen, out->os(), nullptr,
                                 llvm::CodeGenFileType::ObjectFile))
    return fail("the target cannot emit an object file");
  codegen.run(*llvmModule);
  out->keep();
  return 0;
}
