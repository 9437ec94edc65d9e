//===- ParseLLVMIR.h - LLVM IR text as a module in unit tests ---*- C++ -*-===//
//
// The unit tests of the JIT's rewrites of LLVM IR (TableLookupsTest,
// ByteDotProductsTest) build their inputs as LLVM assembly.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_UNITTESTS_PARSELLVMIR_H
#define GPTQ_UNITTESTS_PARSELLVMIR_H

#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

/// `ir` parsed in `context`; a test failure (and null) if it does not parse.
inline std::unique_ptr<llvm::Module> parseLLVMIR(llvm::LLVMContext &context,
                                                 const std::string &ir) {
  llvm::SMDiagnostic error;
  std::unique_ptr<llvm::Module> m =
      llvm::parseAssemblyString(ir, error, context);
  EXPECT_TRUE(m) << error.getMessage().str();
  return m;
}

#endif // GPTQ_UNITTESTS_PARSELLVMIR_H
