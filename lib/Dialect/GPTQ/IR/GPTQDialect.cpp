//===- GPTQDialect.cpp - GPTQ dialect -------------------------------------===//

#include "gptq/Dialect/GPTQ/IR/GPTQ.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::gptq;

#include "gptq/Dialect/GPTQ/IR/GPTQOpsDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "gptq/Dialect/GPTQ/IR/GPTQAttrs.cpp.inc"

void GPTQDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "gptq/Dialect/GPTQ/IR/GPTQAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "gptq/Dialect/GPTQ/IR/GPTQOps.cpp.inc"
      >();
}
