//===- TableLookupsTest.cpp - Kernel table lookups as AVX-512 permutes ----===//

#include "gptq/Execution/TableLookups.h"

#include "ParseLLVMIR.h"

#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/IntrinsicsX86.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <string>

using namespace llvm;

namespace {

/// A function `@f(t, v, u)` returning a lookup of table t (<16 x `type`>)
/// at `v & mask`, built lane by lane as the vector dialect lowers
/// __gptq_lut16. Lane `otherTableLane` reads table u instead, lane
/// `otherIndexLane` the next lane's index (-1: none).
std::string lookupFunction(const std::string &type, int mask,
                           int otherTableLane = -1, int otherIndexLane = -1) {
  std::string ir;
  raw_string_ostream os(ir);
  os << "define <16 x " << type << "> @f(<16 x " << type
     << "> %t, <16 x i32> %v, <16 x " << type << "> %u) {\n"
     << "  %m = and <16 x i32> %v, splat (i32 " << mask << ")\n";
  for (int i = 0; i < 16; ++i) {
    int indexLane = i == otherIndexLane ? (i + 1) % 16 : i;
    os << "  %i" << i << " = extractelement <16 x i32> %m, i64 " << indexLane
       << "\n"
       << "  %x" << i << " = zext nneg i32 %i" << i << " to i64\n"
       << "  %e" << i << " = extractelement <16 x " << type << "> "
       << (i == otherTableLane ? "%u" : "%t") << ", i64 %x" << i << "\n"
       << "  %r" << i << " = insertelement <16 x " << type << "> "
       << (i == 0 ? std::string("poison") : "%r" + std::to_string(i - 1))
       << ", " << type << " %e" << i << ", i64 " << i << "\n";
  }
  os << "  ret <16 x " << type << "> %r15\n}\n";
  return ir;
}

/// The permute `@f` returns, if it returns one.
IntrinsicInst *returnedPermute(Module &m) {
  auto *ret = cast<ReturnInst>(m.getFunction("f")->back().getTerminator());
  return dyn_cast<IntrinsicInst>(ret->getReturnValue());
}

TEST(TableLookups, FloatLookupBecomesPermuteOfUnmaskedIndices) {
  LLVMContext context;
  std::unique_ptr<Module> m = parseLLVMIR(context, lookupFunction("float", 15));
  EXPECT_EQ(mlir::gptq::rewriteTableLookupsForAVX512(*m), 1u);
  EXPECT_FALSE(verifyModule(*m, &errs()));
  IntrinsicInst *permute = returnedPermute(*m);
  ASSERT_TRUE(permute);
  EXPECT_EQ(permute->getIntrinsicID(), Intrinsic::x86_avx512_permvar_sf_512);
  Function *f = m->getFunction("f");
  EXPECT_EQ(permute->getArgOperand(0), f->getArg(0));
  EXPECT_EQ(permute->getArgOperand(1), f->getArg(1));
  // The mask, the lanes and their inserts are gone: the permute and the
  // return are all that is left.
  EXPECT_EQ(f->front().size(), 2u);
}

TEST(TableLookups, IntegerLookupBecomesIntegerPermute) {
  LLVMContext context;
  std::unique_ptr<Module> m = parseLLVMIR(context, lookupFunction("i32", 15));
  EXPECT_EQ(mlir::gptq::rewriteTableLookupsForAVX512(*m), 1u);
  IntrinsicInst *permute = returnedPermute(*m);
  ASSERT_TRUE(permute);
  EXPECT_EQ(permute->getIntrinsicID(), Intrinsic::x86_avx512_permvar_si_512);
}

TEST(TableLookups, OtherShapesAreLeftAlone) {
  // A mask that lets indices past the table through (the permute would
  // wrap them), a lane that reads another table, and a lane whose index
  // is another lane's: none is a permute of v.
  for (const std::string &ir :
       {lookupFunction("float", 31), lookupFunction("float", 15, 5),
        lookupFunction("float", 15, -1, 3)}) {
    LLVMContext context;
    std::unique_ptr<Module> m = parseLLVMIR(context, ir);
    EXPECT_EQ(mlir::gptq::rewriteTableLookupsForAVX512(*m), 0u) << ir;
    EXPECT_FALSE(returnedPermute(*m));
  }
}

} // namespace
