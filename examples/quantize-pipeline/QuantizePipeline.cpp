//===- QuantizePipeline.cpp - GPTQ in a pipeline built in C++ -------------===//
//
// gptq-pipeline-example MODEL.mlir OUT.mlir
//
// The C++ API in one program: parse a model that an importer wrote (its
// weights in the module), quantize it with GPTQ (4 bits, groups of 32) on
// calibration tokens held in memory, print the report, write the quantized
// module to OUT.mlir, then lower it for the CPU in a second pipeline.
//
//===----------------------------------------------------------------------===//

#include "gptq/InitGPTQ.h"
#include "gptq/Pipelines/Pipelines.h"
#include "gptq/Driver/QuantizeModel.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <vector>

using namespace mlir;

int main(int argc, char **argv) {
  if (argc != 3) {
    llvm::errs() << "usage: " << argv[0] << " MODEL.mlir OUT.mlir\n";
    return 2;
  }
  DialectRegistry registry;
  gptq::registerGPTQDialects(registry);
  MLIRContext context(registry);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(argv[1], &context);
  if (!module)
    return 1;

  // Calibration: 4 samples of 32 token ids below the model's vocabulary
  // (its gptq.model attribute), token t = (7919 * i + 13) mod vocabulary.
  auto model = (*module)->getAttrOfType<DictionaryAttr>("gptq.model");
  auto vocab = model ? model.getAs<IntegerAttr>("vocab_size") : IntegerAttr();
  if (!vocab) {
    llvm::errs() << argv[1] << ": no gptq.model attribute with vocab_size\n";
    return 1;
  }
  std::vector<int32_t> tokens(4 * 32);
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = int32_t((7919 * int64_t(i) + 13) % vocab.getInt());

  gptq::GPTQQuantizeModelOptions options;
  options.bits = 4;
  options.groupSize = 32;
  options.calibrationBatch = 4;
  gptq::QuantizeModelReport report;
  gptq::QuantizeModelIO io;
  io.calibration = gptq::NpyView{
      gptq::DType::I32,
      {4, 32},
      llvm::StringRef(reinterpret_cast<const char *>(tokens.data()),
                      tokens.size() * sizeof(int32_t))};
  io.report = &report;
  io.log = &llvm::nulls(); // the report below says it all

  PassManager quantize(&context);
  quantize.addPass(gptq::createQuantizeModelPass(options, io));
  if (failed(quantize.run(*module)))
    return 1; // the diagnostics are printed

  for (const gptq::QuantizedLayerReport &layer : report.layers)
    llvm::outs() << llvm::formatv("{0,-30} {1,4} x {2,-4} {3} error {4:e3}, "
                                  "round to nearest {5:e3}\n",
                                  layer.name, layer.out, layer.in,
                                  layer.method, layer.error.value_or(0),
                                  layer.rtnError.value_or(0));
  llvm::outs() << llvm::formatv(
      "{0} layers, weights {1} -> {2} bytes, {3:F1} s\n", report.layers.size(),
      report.weightBytes, report.quantizedWeightBytes, report.totalSeconds);

  {
    std::error_code ec;
    llvm::raw_fd_ostream out(argv[2], ec, llvm::sys::fs::OF_None);
    if (ec) {
      llvm::errs() << argv[2] << ": " << ec.message() << "\n";
      return 1;
    }
    module->print(out);
    out << "\n";
  }

  // The quantized model to the LLVM dialect, for the host CPU.
  PassManager lower(&context);
  gptq::buildCPUPipeline(lower, gptq::CPUPipelineOptions());
  if (failed(lower.run(*module)))
    return 1;
  size_t functions = 0;
  module->walk([&](LLVM::LLVMFuncOp) { ++functions; });
  llvm::outs() << "lowered for the CPU: " << functions
               << " LLVM functions\n";
  return 0;
}
