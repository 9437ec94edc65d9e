//===- FrontendInput.h - Modules in other frontends' dialects ---*- C++ -*-===//
//
// JAX writes StableHLO (with CHLO ops such as chlo.erfc), and IREE's input
// conversion (`iree-compile --compile-to=input`) writes linalg inside
// `util.func`. The tools read neither dialect themselves: a StableHLO module
// is converted to func.func and linalg on tensors by IREE's own input
// conversion, run as `iree-opt` (from the `iree-base-compiler` package) with
//
//   builtin.module(inline, func.func(chlo-legalize-to-stablehlo),
//                  iree-stablehlo-to-iree-input, canonicalize)
//
// keeping the locations (JAX's argument names among them); a module of
// `util.func` and `util.return` around upstream ops gets `func.func` and
// `func.return` in their place. Other IREE ops (`util.global`, `flow.*`) are
// an error naming them and their line.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_SUPPORT_FRONTENDINPUT_H
#define GPTQ_SUPPORT_FRONTENDINPUT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <optional>
#include <string>

namespace mlir {
namespace gptq {

/// The first op of a dialect the tools read only through a conversion:
/// its name (`stablehlo.dot_general`, `util.func`) and 1-based line.
struct FrontendOp {
  std::string name;
  size_t line = 0;
};

/// The first StableHLO, CHLO or IREE `util` op of a textual module, if
/// any (bytecode holds none that the tools could not parse).
std::optional<FrontendOp> findFrontendOp(llvm::StringRef text);

/// The program that converts StableHLO: $GPTQ_IREE_OPT, else `iree-opt` on
/// the PATH, else the `iree-opt` beside the running Python's venv
/// ($VIRTUAL_ENV); empty when there is none.
std::string findIreeOpt();

/// `input` as the tools read it: itself when it holds no frontend op;
/// converted (see above) otherwise, named as the input and ending with a
/// guard as openModuleFile's buffers do, after a note on stderr that says
/// what was converted and how; null with `*error` set when the conversion
/// fails or cannot run.
std::unique_ptr<llvm::MemoryBuffer>
convertFrontendInput(std::unique_ptr<llvm::MemoryBuffer> input,
                     std::string *error);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_SUPPORT_FRONTENDINPUT_H
