//===- DescribeModel.h - What a reader of a model needs of its module -----===//
//
// The description gptqModuleDescribeModel hands out (gptq-c/Run.h): a
// module's attributes, and per function its dense_resource constants and
// the quantized layers that --gptq-quantize-model rewrote, found by walking
// the IR. Private to the C API.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_CAPI_DESCRIBEMODEL_H
#define GPTQ_CAPI_DESCRIBEMODEL_H

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir {
namespace gptq {

/// The JSON object of gptqModuleDescribeModel, ending with a newline. Says
/// which constants' data the module holds itself: call it before the
/// parameter archives are attached to the module's resources.
std::string describeModel(ModuleOp module);

/// The blob of the module's dense_resource `key`; null when none is
/// attached to it.
AsmResourceBlob *findResourceBlob(MLIRContext *context, llvm::StringRef key);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_CAPI_DESCRIBEMODEL_H
