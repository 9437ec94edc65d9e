//===- UKernelDialect.cpp - The CPU microkernel dialect -------------------===//

#include "gptq/Dialect/UKernel/IR/UKernel.h"

using namespace mlir;
using namespace mlir::gptq::ukernel;

#include "gptq/Dialect/UKernel/IR/UKernelOpsDialect.cpp.inc"

void UKernelDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "gptq/Dialect/UKernel/IR/UKernelOps.cpp.inc"
      >();
}
