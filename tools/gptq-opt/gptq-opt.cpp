//===- gptq-opt.cpp - The gptq optimizer driver ---------------------------===//
//
// mlir-opt with the gptq dialect, its passes and pipelines, and the upstream
// dialects and passes the pipelines use. Unlike mlir-opt, the output file is
// written beside its final name and renamed into place only when the whole
// run succeeded: a failed run never truncates or removes an existing file.
// Files that passes write (report=, dump-hessians=, dump-stages=) are
// committed with it, after the last pass, or not at all.
//
//===----------------------------------------------------------------------===//

#include "gptq/Driver/QuantizeModel.h"
#include "gptq/Execution/Jit.h"
#include "gptq/Execution/Parameters.h"
#include "gptq/InitGPTQ.h"
#include "gptq/Support/ModuleFile.h"
#include "gptq/Support/Output.h"
#include "gptq/Support/SourceLines.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/Pass.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "gptq-opt") << message << "\n";
  return 1;
}

static llvm::cl::opt<bool> embedParameters(
    "embed-parameters",
    llvm::cl::desc(
        "Write the weights of a module that names parameter archives "
        "(gptq.parameters: an import-hf module reads its checkpoint) into "
        "the output module, rather than referring to the archives and "
        "writing new weights (quantized ones) to OUTPUT.safetensors beside "
        "it (OUTPUT minus .mlir)"),
    llvm::cl::init(false));

static int run(int argc, char **argv) {
  registerAllPasses();
  gptq::registerGPTQPassesAndPipelines();

  DialectRegistry registry;
  gptq::registerGPTQDialects(registry);
  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv,
      "gptq-opt: the gptq-mlir optimizer driver\n\n"
      "Reads MLIR (text or bytecode); StableHLO (JAX's) through IREE's input\n"
      "conversion (iree-opt: $GPTQ_IREE_OPT, the PATH or the active venv),\n"
      "IREE's util.func form as func.func (docs/frontends.md).\n",
      registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  // Weights kept in parameter archives are attached before the passes of
  // the command line run, which run inside the pass that attaches them.
  // Then the text output names the archives for the weights that are
  // unchanged and writes the others to OUTPUT.safetensors (committed with
  // the output); with --embed-parameters, stdout or bytecode, it holds them.
  MlirOptMainConfig commandLine = config;
  std::string storeTo = outputFilename == "-" || embedParameters ||
                                config.shouldEmitBytecode()
                            ? ""
                            : outputFilename;
  // The input's name and text, once read: diagnostics located on one of its
  // long lines (an import-hf module's attributes, a weight's blob) are
  // printed without the line. Under -verify-diagnostics every diagnostic
  // goes to the verifier.
  // Every file the run reads and writes: passes that write files (report=,
  // dump-hessians=, ...) check theirs against these and add them to the
  // outputs, which are committed together after the last pass.
  gptq::RunFiles files;
  std::string inputName;
  llvm::StringRef inputText;
  config.setPassPipelineSetupFn(
      [commandLine, file = std::string(inputFilename), &inputName, &inputText,
       &files, storeTo](PassManager &pm) -> LogicalResult {
        if (!commandLine.shouldVerifyDiagnostics())
          gptq::registerLongLineHandler(pm.getContext(), inputName, inputText);
        // A malformed pass option (bits=abc) is reported by the option's
        // parser, in one line; the error MLIR then emits has no location
        // and no message (or one that starts on a line of its own): it is
        // printed as one line of ours, or dropped when empty.
        ScopedDiagnosticHandler oneLine(pm.getContext(), [](Diagnostic &d) {
          if (d.getSeverity() != DiagnosticSeverity::Error ||
              !isa<UnknownLoc>(d.getLocation()))
            return failure();
          std::string text = d.str();
          // The pipeline parser's message shows the pipeline and a caret
          // under the fault on lines of their own: its first line says it.
          std::string message =
              llvm::StringRef(text).trim().split('\n').first.rtrim().str();
          if (!message.empty())
            fail(message);
          return success();
        });
        if (failed(commandLine.setupPassPipeline(pm)))
          return failure();
        OpPassManager passes = pm;
        gptq::attachRunFiles(passes, files);
        pm.clear();
        pm.addPass(gptq::createLoadParametersPass(
            file, "gptq-opt", std::move(passes), files, storeTo));
        return success();
      });
  // Listings print to stdout and read no input.
  if (config.shouldShowDialects() || config.shouldListPasses())
    return asMainReturnCode(
        MlirOptMain(argc, argv, inputFilename, "-", registry));

  if (llvm::Error err =
          files.addInput(inputFilename, "the input module", /*replacedBy=*/"-o"))
    return fail(llvm::toString(std::move(err)));
  if (llvm::Error err = files.addOutput(outputFilename, "-o"))
    return fail(llvm::toString(std::move(err)));
  // The archive beside -o that the weights may go to (when the input names
  // archives): checked now, with the other outputs.
  if (!storeTo.empty())
    if (llvm::Error err =
            files.addOutput(gptq::parameterArchiveFor(storeTo),
                            "the parameter archive of -o"))
      return fail(llvm::toString(std::move(err)));
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> input =
      gptq::openModuleFile(inputFilename, &errorMessage);
  if (!input)
    return fail(errorMessage);
  inputName = input->getBufferIdentifier().str();
  inputText = input->getBuffer();
  if (outputFilename == "-") {
    if (failed(MlirOptMain(llvm::outs(), std::move(input), registry, config)))
      return 1;
    llvm::outs().flush();
    llvm::Error err = files.commit();
    return err ? fail(llvm::toString(std::move(err))) : 0;
  }
  // Diagnostics are printed as they come; a failure discards the output.
  llvm::Error err = files.outputs().add(
      outputFilename, [&](llvm::raw_ostream &os) -> llvm::Error {
        if (failed(MlirOptMain(os, std::move(input), registry, config)))
          return llvm::make_error<llvm::StringError>(
              "", llvm::inconvertibleErrorCode());
        return llvm::Error::success();
      });
  if (!err)
    err = files.commit();
  if (!err)
    return 0;
  std::string message = llvm::toString(std::move(err));
  // An empty message: the run failed and its diagnostics are printed.
  return message.empty() ? 1 : fail(message);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // MLIR's parser and printer recurse once per level of nesting: a large
  // stack turns deeply nested input into a diagnostic (or a result) rather
  // than a stack overflow.
  return gptq::runTool("gptq-opt", [&] { return run(argc, argv); });
}
