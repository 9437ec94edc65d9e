//===- Jit.h - Compile and call MLIR functions on arrays --------*- C++ -*-===//
//
// A small wrapper around the MLIR ExecutionEngine: lowers a module with a
// pipeline the caller chooses (the gptq CPU pipeline unless told
// otherwise), JIT-compiles it for the host, and calls a function on
// .npy arrays, checking dtypes, ranks and static sizes against its
// signature.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_EXECUTION_JIT_H
#define GPTQ_EXECUTION_JIT_H

#include "gptq/Execution/Call.h"
#include "gptq/Support/Npy.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/SourceMgr.h"

#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class ExecutionEngine;
class DialectRegistry;
class OpPassManager;
namespace gptq {

/// The array dtype that holds elements of `type` in arguments and results
/// of compiled functions: f32, f64, f16, bf16 (weights and arguments; no
/// .npy file holds a bf16 result), i1 (bool), i8, i16, i32, i64 and index
/// (int64); none for other types.
std::optional<DType> dtypeOfElementType(Type type);

/// The raw little-endian bytes of a constant's elements, where they lie in
/// the attribute: those of a non-splat `dense` attribute or of a
/// `dense_resource` blob; none for a splat, a resource without its blob, or
/// another attribute.
std::optional<llvm::ArrayRef<char>> rawElementData(ElementsAttr attr);

struct JitOptions {
  /// Fills the pass manager that lowers a module to the LLVM dialect. Empty:
  /// the CPU pipeline (gptq-lower-to-cpu-pipeline) with choleskyBlock.
  std::function<void(OpPassManager &)> pipeline;
  /// Block size of the blocked Cholesky factorization (the default
  /// pipeline's option); none: the pipeline's default (128 on the CPU, 256
  /// on a GPU).
  std::optional<int64_t> choleskyBlock;
  /// The default pipeline's kernels: "cpu" or "portable" (see
  /// convert-gptq-to-linalg).
  std::string kernels = "cpu";
  /// The instruction set of the CPU kernels and the generated code (see
  /// CpuIsa.h): "host", or one the host has ("generic", "avx2", "avx512",
  /// "avx512-vnni"), whose generic CPU the code is then generated for.
  std::string cpuIsa = "host";
  /// The 4-bit decode kernel's byte dot products: "auto" (where the
  /// instruction set has AVX-512 VNNI), "on" or "off".
  std::string byteDots = "auto";
  /// Where the code runs: "cpu", or "cuda": the default pipeline is then
  /// gptq-lower-to-nvvm-pipeline for the default GPU's architecture, the
  /// code calls libGPTQCudaRuntime, and compiling fails with the driver's
  /// reason when there is no usable GPU.
  std::string device = "cpu";
  /// With device "cuda": the GPU architecture to compile for ("sm_90");
  /// empty: the default GPU's, which must then answer.
  std::string chip;
  /// With a GPU device: the matrix products' tensor cores ("off", "tf32",
  /// "3xtf32"; gptq-lower-to-nvvm-pipeline's tensor-cores); none: the
  /// pipeline's default.
  std::optional<std::string> tensorCores;
  /// LLVM optimization level of the generated code.
  unsigned optLevel = 3;
  /// Where compiled code is kept between runs, as shared libraries named by
  /// a hash of the module before lowering, the pipeline's text, the
  /// compiler's build and the host CPU (of the lowered module when
  /// `pipeline` is set, which has no text); empty: no cache. The
  /// cache is best-effort: a damaged entry is compiled afresh and replaced,
  /// and a directory that cannot be written (missing permissions, a full
  /// disk) gives one warning per process and compiled code that is not kept.
  std::string cacheDir;
  /// The name that prefixes warnings ("gptq-run: warning: ...").
  std::string toolName = "gptq-mlir";
  /// Whether the entry's weights become arguments that calls pass in place
  /// (see CompiledFunction::compile) rather than code and data compiled
  /// into the function.
  bool hoistWeights = true;
  /// When set, the compiled code is also stored here as a position-
  /// independent object file for the host, to be linked ahead of time
  /// (gptq-compile); the cache is neither read nor written then.
  std::string *object = nullptr;
};

/// The least size in bytes of a dense (not dense_resource) constant that
/// CompiledFunction::compile treats as a weight.
constexpr int64_t kWeightBytes = 1024;
/// The alignment in bytes of the weights compiled functions read (a cache
/// line, and the size of an AVX-512 vector): data less aligned is copied,
/// except a parameter archive's tensors (immutable blobs over the mapped
/// file, see Parameters.h), read in place when their elements are aligned:
/// a checkpoint's safetensors align tensors only to their elements.
constexpr size_t kWeightAlignment = 64;

/// Command-line options every tool that compiles shares (--no-cache). The
/// first call registers them, so call it before cl::ParseCommandLineOptions,
/// e.g. as cl::HideUnrelatedOptions({&toolCategory, &jitOptionCategory()}).
llvm::cl::OptionCategory &jitOptionCategory();
/// JitOptions as the shared command-line options set them, for the tool
/// `toolName`.
JitOptions jitOptionsFromCommandLine(llvm::StringRef toolName);

/// The cache directory the tools use: $GPTQ_MLIR_CACHE_DIR, or
/// $XDG_CACHE_HOME/gptq-mlir, or ~/.cache/gptq-mlir; empty when
/// GPTQ_MLIR_CACHE_DIR is "off".
std::string defaultCacheDir();

/// Waits until the cache entries this process began to write are written:
/// compiling returns once the code is ready, and the entry's library is
/// linked on a thread of its own beside what the caller does next (the
/// compiled code waits for it before it goes).
void waitForCacheWrites();

/// Stack size of the thread on which the tools parse and lower user input
/// (MLIR's parser recurses once per level of nesting).
constexpr unsigned kToolStackBytes = 1u << 30;

/// Runs the work of the tool `toolName` and returns its exit status: on a
/// thread with a kToolStackBytes stack, so that deeply nested input becomes
/// a diagnostic rather than a stack overflow, and with running out of memory
/// ending the process with one line "TOOL: error: out of memory ..." and
/// exit status 1 (temporary files removed), rather than an abort with a
/// stack trace. The tools' main functions run their work this way.
int runTool(const char *toolName, llvm::function_ref<int()> body);

/// Adds every dialect and extension the gptq tools parse and lower.
void registerToolDialects(DialectRegistry &registry);

/// A context with every dialect the tools parse and lower, all loaded. Code
/// compiled from inside a pass or a library gets one of its own, so that
/// compiling does not load dialects into (or lower in) the context of the
/// module being processed.
std::unique_ptr<MLIRContext> makeToolContext();

/// The MLIR file a tool reads: a context with every dialect the tools parse
/// and lower (registerToolDialects, all loaded), whose diagnostics are
/// printed to stderr against the file's text.
class ToolInput {
public:
  ToolInput();
  /// Diagnostics go to `diagnostics` instead (a library collecting them
  /// for its error values).
  explicit ToolInput(llvm::raw_ostream &diagnostics);
  /// Parses the file `path`; one that cannot be read, or does not parse,
  /// is the error (the parser's own diagnostics printed first). With
  /// `regularOnly`, a path that is not a regular file is refused without
  /// blocking (openModuleFile).
  llvm::Expected<OwningOpRef<ModuleOp>> parse(llvm::StringRef path,
                                              bool regularOnly = false);
  MLIRContext &context() { return ctx; }

private:
  MLIRContext ctx;
  llvm::raw_ostream &diagnostics;
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler;
};

/// The signature of a function that CompiledFunction can call.
struct EntrySignature {
  std::vector<ArgSpec> inputs, results;
};

/// The signature of `entry` in `module` as CompiledFunction::compile reads
/// it, or the error compile gives for it (no such function, private, no
/// body, types the runner cannot exchange). Reads only; compiles nothing.
llvm::Expected<EntrySignature> entrySignature(ModuleOp module,
                                              llvm::StringRef entry);

/// The names of the module's functions that look like entries, in order:
/// public func.func with a body, and llvm.func that keep their original
/// signature (lowered by the gptq pipelines; not their _mlir_ciface_
/// wrappers). entrySignature may still
/// reject one of them for its types.
std::vector<std::string> entryNames(ModuleOp module);

/// The function a tool calls when its command line names none: @main when
/// the module has it, else the module's only entry (entryNames: torch-mlir's
/// @torch_jit, an importer's @forward), else "main" (which the tool then
/// reports missing, listing the entries).
std::string defaultEntryName(ModuleOp module);

/// A cache entry being written on a thread of its own (Jit.cpp).
struct CacheWrite;

/// The code of one compiled module, which the functions compiled from it
/// share: the JIT's engine, or the cached library it was loaded from.
struct CompiledCode {
  ~CompiledCode();
  std::unique_ptr<ExecutionEngine> engine;
  void *library = nullptr;
  /// The write of its cache entry, which runs beside the caller's work and
  /// is waited for before the code goes.
  std::shared_ptr<CacheWrite> write;
};

/// A function of an MLIR module, compiled for the host CPU.
class CompiledFunction {
public:
  ~CompiledFunction();

  /// Lowers `module` with `options.pipeline` (unless it is already in the
  /// LLVM dialect) and JIT-compiles it; `entry` must be a public func.func, or
  /// an llvm.func that carries its original signature in a `gptq.signature`
  /// attribute.
  ///
  /// Weights stay out of the compiled code: with options.hoistWeights, each
  /// constant of the entry's body (outside ops isolated from above) that is
  /// a non-splat tensor of f32, f64, f16, bf16 or 8- to 64-bit integers,
  /// held in a dense_resource (any size) or a dense attribute of at least
  /// kWeightBytes, becomes a hidden trailing argument of the entry
  /// (identical constants share one), and every call passes the constant's
  /// own data in place (copied once at compile time where it is not aligned
  /// as kWeightAlignment says).
  /// Neither the code nor the cache key holds the weights, so changing them
  /// reuses the cached code. The data stays in the module's MLIRContext (or
  /// the parameter archive it maps, see Parameters.h): call the function
  /// only while that context lives. Entries that other functions of the
  /// module call keep their constants.
  static llvm::Expected<std::unique_ptr<CompiledFunction>>
  compile(OwningOpRef<ModuleOp> module, llvm::StringRef entry,
          const JitOptions &options = {});
  /// Compiles several `entries` of `module` as compile() compiles one, in
  /// one lowering, one LLVM module and one cache entry: the functions, one
  /// per entry in their order, share the code. What a module costs whatever
  /// its size (the pass pipelines' setup, the JIT's, linking the cached
  /// library) is paid once for all. Not with options.object.
  static llvm::Expected<std::vector<std::unique_ptr<CompiledFunction>>>
  compileEntries(OwningOpRef<ModuleOp> module,
                 llvm::ArrayRef<std::string> entries,
                 const JitOptions &options = {});

  /// Parses `source`, MLIR text that the caller generated (named
  /// `bufferName` in messages), in `context` and compiles its function
  /// `entry` as compile() does; text that does not parse is an internal
  /// error.
  static llvm::Expected<std::unique_ptr<CompiledFunction>>
  compileSource(MLIRContext &context, llvm::StringRef source,
                llvm::StringRef bufferName, llvm::StringRef entry,
                const JitOptions &options = {});

  const std::vector<ArgSpec> &inputs() const { return packed.inputs; }
  const std::vector<ArgSpec> &results() const { return packed.results; }
  /// The compiled entry as callPackedEntry calls it.
  const PackedEntry &entry() const { return packed; }

  /// Calls the function. `names` (optional) label inputs in diagnostics.
  /// Memref arguments are copied first, unless `writeMemRefsInPlace` (see
  /// callPackedEntry).
  llvm::Expected<std::vector<NpyArray>>
  call(const std::vector<NpyArray> &args,
       const std::vector<std::string> &names = {},
       bool writeMemRefsInPlace = false) const;

  /// Seconds spent lowering and compiling (or loading cached code): with
  /// compileEntries, those of all the entries together.
  double compileSeconds() const { return compileTime; }
  /// Whether the code came from the cache.
  bool fromCache() const { return code && code->library != nullptr; }

  /// How many weights became hidden arguments.
  size_t numHoistedWeights() const { return weights.size(); }

private:
  /// A constant that became a hidden trailing argument: its data, in the
  /// MLIRContext, or in `copy` when that data is not aligned to
  /// kWeightAlignment bytes.
  struct Weight {
    DType dtype;
    std::vector<int64_t> shape;
    const char *data = nullptr;
    std::unique_ptr<char, void (*)(void *)> copy{nullptr, std::free};
  };
  CompiledFunction() = default;
  /// A function for each of `entries` of `module` (their signatures), whose
  /// code will be `code`.
  static llvm::Expected<std::vector<std::unique_ptr<CompiledFunction>>>
  createEntries(ModuleOp module, llvm::ArrayRef<std::string> entries,
                const std::shared_ptr<CompiledCode> &code);
  llvm::Error hoistWeights(ModuleOp module);
  void markWeightsReadOnly(ModuleOp module);
  std::vector<Weight> weights;
  /// The weights as every call passes them, after the caller's arguments.
  std::vector<EntryWeight> hiddenWeights;
  std::shared_ptr<CompiledCode> code;
  PackedEntry packed;
  double compileTime = 0;
};

} // namespace gptq
} // namespace mlir

#endif // GPTQ_EXECUTION_JIT_H
