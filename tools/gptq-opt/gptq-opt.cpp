//===- gptq-opt.cpp - The gptq optimizer driver ---------------------------===//
//
// mlir-opt with the gptq dialect, its passes and pipelines, and the upstream
// dialects and passes the pipelines use.
//
//===----------------------------------------------------------------------===//

#include "gptq/Conversion/Passes.h"
#include "gptq/Dialect/GPTQ/Transforms/Passes.h"
#include "gptq/Execution/Jit.h"
#include "gptq/Pipelines/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

static int run(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::gptq::registerGPTQPasses();
  mlir::gptq::registerGPTQConversionPasses();
  mlir::gptq::registerPipelines();

  mlir::DialectRegistry registry;
  mlir::gptq::registerToolDialects(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "gptq-opt: the gptq-mlir optimizer driver\n", registry));
}

int main(int argc, char **argv) {
  // MLIR's parser and printer recurse once per level of nesting: a large
  // stack turns deeply nested input into a diagnostic (or a result) rather
  // than a stack overflow.
  return mlir::gptq::runWithToolStack([&] { return run(argc, argv); });
}
