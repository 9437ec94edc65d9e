//===- TableLookupsTest.cpp - Kernel table lookups as x86 permutes --------===//

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

#include <optional>
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
  EXPECT_EQ(mlir::gptq::rewriteTableLookups(
                *m, mlir::gptq::TableLookupTarget::AVX512),
            1u);
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
  EXPECT_EQ(mlir::gptq::rewriteTableLookups(
                *m, mlir::gptq::TableLookupTarget::AVX512),
            1u);
  IntrinsicInst *permute = returnedPermute(*m);
  ASSERT_TRUE(permute);
  EXPECT_EQ(permute->getIntrinsicID(), Intrinsic::x86_avx512_permvar_si_512);
}

/// The intrinsic calls of `f`, in order.
SmallVector<IntrinsicInst *> intrinsicCalls(Function &f) {
  SmallVector<IntrinsicInst *> calls;
  for (Instruction &inst : f.front())
    if (auto *call = dyn_cast<IntrinsicInst>(&inst))
      calls.push_back(call);
  return calls;
}

/// Lane `i` of `v` if it is a constant's lane.
std::optional<int64_t> constantLane(Value *v, unsigned i) {
  if (auto *c = dyn_cast<Constant>(v))
    if (auto *lane = dyn_cast_or_null<ConstantInt>(c->getAggregateElement(i)))
      return lane->getSExtValue();
  return std::nullopt;
}

/// Whether `v` is lanes first .. first + 7 of `whole`.
bool isHalfOf(Value *v, Value *whole, int first) {
  auto *shuffle = dyn_cast<ShuffleVectorInst>(v);
  if (!shuffle || shuffle->getOperand(0) != whole)
    return false;
  ArrayRef<int> mask = shuffle->getShuffleMask();
  if (mask.size() != 8)
    return false;
  for (int i = 0; i < 8; ++i)
    if (mask[i] != first + i)
      return false;
  return true;
}

/// The lookup of a table of `type` rewritten for AVX2 (one lookup, a
/// valid module).
std::unique_ptr<Module> rewrittenForAVX2(LLVMContext &context,
                                         const std::string &type) {
  std::unique_ptr<Module> m = parseLLVMIR(context, lookupFunction(type, 15));
  EXPECT_EQ(
      mlir::gptq::rewriteTableLookups(*m, mlir::gptq::TableLookupTarget::AVX2),
      1u);
  EXPECT_FALSE(verifyModule(*m, &errs()));
  return m;
}

TEST(TableLookups, FloatLookupBecomesAVX2PermutesOfEachHalf) {
  LLVMContext context;
  std::unique_ptr<Module> m = rewrittenForAVX2(context, "float");
  Function *f = m->getFunction("f");
  Value *table = f->getArg(0), *codes = f->getArg(1);
  // Each half of the codes reads the table's low and high halves.
  SmallVector<IntrinsicInst *> permutes = intrinsicCalls(*f);
  ASSERT_EQ(permutes.size(), 4u);
  for (unsigned i = 0; i < 4; ++i) {
    EXPECT_EQ(permutes[i]->getIntrinsicID(), Intrinsic::x86_avx2_permps);
    EXPECT_TRUE(isHalfOf(permutes[i]->getArgOperand(0), table, 8 * (i % 2)));
    EXPECT_TRUE(isHalfOf(permutes[i]->getArgOperand(1), codes, 8 * (i / 2)))
        << i;
  }
  // The result: the two halves' selections, bit 3 of each code choosing
  // the high half's permute.
  auto *ret = cast<ReturnInst>(f->back().getTerminator());
  auto *join = dyn_cast<ShuffleVectorInst>(ret->getReturnValue());
  ASSERT_TRUE(join);
  EXPECT_EQ(join->getShuffleMask().size(), 16u);
  for (unsigned part = 0; part < 2; ++part) {
    auto *select = dyn_cast<SelectInst>(join->getOperand(part));
    ASSERT_TRUE(select);
    EXPECT_EQ(select->getTrueValue(), permutes[2 * part + 1]);
    EXPECT_EQ(select->getFalseValue(), permutes[2 * part]);
    auto *isHigh = dyn_cast<ICmpInst>(select->getCondition());
    ASSERT_TRUE(isHigh);
    EXPECT_EQ(isHigh->getPredicate(), ICmpInst::ICMP_NE);
    auto *bit3 = dyn_cast<BinaryOperator>(isHigh->getOperand(0));
    ASSERT_TRUE(bit3);
    EXPECT_EQ(bit3->getOpcode(), Instruction::And);
    EXPECT_TRUE(isHalfOf(bit3->getOperand(0), codes, 8 * part));
    EXPECT_EQ(constantLane(bit3->getOperand(1), 0), 8);
  }
  // The mask and the lanes are gone.
  for (Instruction &inst : f->front())
    EXPECT_FALSE((isa<ExtractElementInst, InsertElementInst>(inst)))
        << inst.getOpcodeName();
}

TEST(TableLookups, IntegerLookupBecomesAVX2IntegerPermutes) {
  LLVMContext context;
  std::unique_ptr<Module> m = rewrittenForAVX2(context, "i32");
  SmallVector<IntrinsicInst *> permutes = intrinsicCalls(*m->getFunction("f"));
  ASSERT_EQ(permutes.size(), 4u);
  for (IntrinsicInst *permute : permutes)
    EXPECT_EQ(permute->getIntrinsicID(), Intrinsic::x86_avx2_permd);
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
    for (auto target : {mlir::gptq::TableLookupTarget::AVX512,
                        mlir::gptq::TableLookupTarget::AVX2}) {
      EXPECT_EQ(mlir::gptq::rewriteTableLookups(*m, target), 0u) << ir;
      EXPECT_FALSE(returnedPermute(*m));
      EXPECT_TRUE(intrinsicCalls(*m->getFunction("f")).empty());
    }
  }
}

} // namespace
