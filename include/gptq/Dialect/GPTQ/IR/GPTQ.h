//===- GPTQ.h - GPTQ dialect ------------------------------------*- C++ -*-===//

#ifndef GPTQ_DIALECT_GPTQ_IR_GPTQ_H
#define GPTQ_DIALECT_GPTQ_IR_GPTQ_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/TilingInterface.h"

#include "gptq/Dialect/GPTQ/IR/GPTQOpsDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "gptq/Dialect/GPTQ/IR/GPTQAttrs.h.inc"

#define GET_OP_CLASSES
#include "gptq/Dialect/GPTQ/IR/GPTQOps.h.inc"

namespace mlir {
namespace gptq {
/// The unit attribute of the functions of the gptq ops' implementation
/// library (the `__gptq_*` kernels that convert-gptq-to-linalg adds, and
/// the microkernel library's wrappers): code whose float operations follow
/// the reference's order, which no model-level rewrite (such as
/// gptq-reassociate-reductions) may change.
constexpr llvm::StringLiteral kLibraryFunctionAttr = "gptq.library";

/// The largest integer code, 2^bits - 1, as the f32 value the grid kernels
/// take: of `bits` (an i64 value, an op's run-time width) when given, else
/// of `config`'s width, as a constant.
Value buildMaxQ(OpBuilder &b, Location loc, ConfigAttr config, Value bits);
} // namespace gptq
} // namespace mlir

#endif // GPTQ_DIALECT_GPTQ_IR_GPTQ_H
