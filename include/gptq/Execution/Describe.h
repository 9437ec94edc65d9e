//===- Describe.h - What a caller needs to know about a module --*- C++ -*-===//
//
// The description `gptq-run --describe` prints and the C API hands out: a
// module's entry functions with their argument and result dtypes and
// shapes, and its gptq.model attribute, as one JSON object. Reads the
// module only; compiles nothing.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_EXECUTION_DESCRIBE_H
#define GPTQ_EXECUTION_DESCRIBE_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>

namespace mlir {
namespace gptq {

/// `{"model": {...} or null, "functions": [...]}`: the module's gptq.model
/// attribute (its keys with integer values, and the string `rotary`), and
/// each function that looks like an entry (entryNames) as `{"name",
/// "inputs", "results"}`, every argument and result as `{"kind": "tensor" |
/// "memref" | "scalar", "dtype": "int32", "shape": [null, 512]}` (null for
/// a dynamic size), or `{"name", "error"}` when it cannot be called. With
/// `entry`, only that function, and the error when it cannot be called.
/// Ends with a newline.
llvm::Expected<std::string>
describeModule(ModuleOp module,
               std::optional<llvm::StringRef> entry = std::nullopt);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_EXECUTION_DESCRIBE_H
