//===- UKernel.h - The CPU microkernel dialect ------------------*- C++ -*-===//

#ifndef GPTQ_DIALECT_UKERNEL_IR_UKERNEL_H
#define GPTQ_DIALECT_UKERNEL_IR_UKERNEL_H

#include "gptq/Dialect/GPTQ/IR/GPTQ.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "gptq/Dialect/UKernel/IR/UKernelOpsDialect.h.inc"

#define GET_OP_CLASSES
#include "gptq/Dialect/UKernel/IR/UKernelOps.h.inc"

#endif // GPTQ_DIALECT_UKERNEL_IR_UKERNEL_H
