//===- EntryFunction.cpp - The function a model pass works on -------------===//

#include "gptq/Quantize/EntryFunction.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::gptq;

namespace {
/// The function as findEntryFunction finds it, a declaration included, or
/// the reason there is none.
FailureOr<func::FuncOp>
lookUpEntry(ModuleOp module, StringRef entry,
            llvm::function_ref<InFlightDiagnostic(Location)> fail) {
  auto error = [&](const llvm::Twine &message) {
    fail(module.getLoc()) << message;
    return failure();
  };
  std::vector<func::FuncOp> bodies, publicBodies;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    bodies.push_back(func);
    if (func.isPublic())
      publicBodies.push_back(func);
  }
  auto list = [](llvm::ArrayRef<func::FuncOp> funcs) {
    std::string names;
    for (func::FuncOp func : funcs)
      names += (names.empty() ? "@" : ", @") + func.getSymName().str();
    return names;
  };
  std::string which = bodies.empty()
                          ? "it has none"
                          : "functions with a body: " + list(bodies);
  if (!entry.empty()) {
    if (auto func = module.lookupSymbol<func::FuncOp>(entry))
      return func;
    return error("no function '@" + entry + "' in the module (" + which +
                 "; set the entry with entry=NAME)");
  }
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (forward && !forward.isExternal())
    return forward;
  if (publicBodies.size() == 1)
    return publicBodies.front();
  // A declared @forward: the caller says what it lacks.
  if (forward && publicBodies.empty())
    return forward;
  if (publicBodies.empty())
    return error("no public function with a body in the module to take as "
                 "the entry (" +
                 which + "; set the entry with entry=NAME)");
  return error("which function is the entry? The module has " +
               llvm::Twine(publicBodies.size()) +
               " public functions with a body and no @forward (" +
               list(publicBodies) + "): set the entry with entry=NAME");
}
} // namespace

FailureOr<func::FuncOp> mlir::gptq::findEntryFunction(
    ModuleOp module, StringRef entry,
    llvm::function_ref<InFlightDiagnostic(Location)> fail) {
  FailureOr<func::FuncOp> func = lookUpEntry(module, entry, fail);
  if (succeeded(func) && func->isExternal()) {
    fail(func->getLoc()) << "'@" << func->getSymName()
                         << "' is a declaration, expected a function with a "
                            "body";
    return failure();
  }
  return func;
}
