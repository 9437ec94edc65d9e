//===- ByteDotProductsTest.cpp - Kernel byte dot products as VNNI ---------===//

#include "gptq/Execution/ByteDotProducts.h"

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
using mlir::gptq::ByteDots;
using mlir::gptq::specializeByteDotProducts;

namespace {

/// A module with `@__gptq_dot4` of lanes `<lanes x i32>` (its portable
/// body: bytes widened, multiplied, a lane's four added) and
/// `@__gptq_byte_dots` (false), marked noinline as the kernels lower them,
/// and `@user` and `@ask` calling them with noinline calls.
std::string dotModule(int lanes = 16) {
  std::string v = "<" + std::to_string(lanes) + " x i32>";
  std::string b = "<" + std::to_string(4 * lanes) + " x i8>";
  std::string w = "<" + std::to_string(4 * lanes) + " x i32>";
  std::string ir;
  raw_string_ostream os(ir);
  os << "define private " << v << " @__gptq_dot4(" << v << " %acc, " << v
     << " %a, " << v << " %b) #0 {\n"
     << "  %ab = bitcast " << v << " %a to " << b << "\n"
     << "  %bb = bitcast " << v << " %b to " << b << "\n"
     << "  %aw = zext " << b << " %ab to " << w << "\n"
     << "  %bw = sext " << b << " %bb to " << w << "\n"
     << "  %p = mul " << w << " %aw, %bw\n"
     << "  %s = call i32 @llvm.vector.reduce.add.v" << 4 * lanes
     << "i32(" << w << " %p)\n"
     << "  %r = insertelement " << v << " %acc, i32 %s, i64 0\n"
     << "  ret " << v << " %r\n}\n"
     << "define " << v << " @user(" << v << " %x) {\n"
     << "  %r = call " << v << " @__gptq_dot4(" << v << " %x, " << v
     << " %x, " << v << " %x) #0\n"
     << "  ret " << v << " %r\n}\n"
     << "define private i1 @__gptq_byte_dots() #0 {\n  ret i1 false\n}\n"
     << "define i1 @ask() {\n  %r = call i1 @__gptq_byte_dots() #0\n"
     << "  ret i1 %r\n}\n"
     << "declare i32 @llvm.vector.reduce.add.v" << 4 * lanes << "i32(" << w
     << ")\n"
     << "attributes #0 = { noinline }\n";
  return ir;
}

/// The call in function `user`.
CallInst *userCall(Module &m, StringRef user = "user") {
  for (Instruction &inst : m.getFunction(user)->front())
    if (auto *call = dyn_cast<CallInst>(&inst))
      return call;
  return nullptr;
}

TEST(ByteDotProducts, TargetNeedsVNNIAndBWOnX86) {
  using mlir::gptq::targetHasByteDotProducts;
  EXPECT_TRUE(targetHasByteDotProducts("+avx512f,+avx512bw,+avx512vnni",
                                       "x86_64-unknown-linux-gnu"));
  EXPECT_FALSE(targetHasByteDotProducts("+avx512f,+avx512bw,-avx512vnni",
                                        "x86_64-unknown-linux-gnu"));
  EXPECT_FALSE(targetHasByteDotProducts("+avx512f,+avx512vnni",
                                        "x86_64-unknown-linux-gnu"));
  // AVX-VNNI (256-bit, VEX) is not the 512-bit instruction.
  EXPECT_FALSE(targetHasByteDotProducts("+avx512f,+avx512bw,+avxvnni",
                                        "x86_64-unknown-linux-gnu"));
  EXPECT_FALSE(targetHasByteDotProducts("+avx512bw,+avx512vnni",
                                        "aarch64-unknown-linux-gnu"));
}

/// What `@__gptq_byte_dots` returns once specialized (and inlinable).
std::optional<bool> predicateAnswer(Module &m) {
  Function *f = m.getFunction("__gptq_byte_dots");
  if (!f || f->isDeclaration() || f->front().size() != 1 ||
      !f->hasFnAttribute(Attribute::AlwaysInline) ||
      f->hasFnAttribute(Attribute::NoInline) ||
      userCall(m, "ask")->hasFnAttr(Attribute::NoInline))
    return std::nullopt;
  auto *ret = cast<ReturnInst>(f->front().getTerminator());
  auto *value = dyn_cast<ConstantInt>(ret->getReturnValue());
  if (!value)
    return std::nullopt;
  return value->isOne();
}

TEST(ByteDotProducts, ModeFromTargetAndEnvironment) {
  using mlir::gptq::byteDotsMode;
  const char *x86 = "x86_64-unknown-linux-gnu";
  const char *vnni = "+avx512f,+avx512bw,+avx512vnni";
  const char *avx2 = "+avx2,+fma";
  std::string error;
  EXPECT_EQ(byteDotsMode(vnni, x86, nullptr, error), ByteDots::VNNI);
  EXPECT_EQ(byteDotsMode(avx2, x86, nullptr, error), ByteDots::Off);
  EXPECT_EQ(byteDotsMode(vnni, x86, "", error), ByteDots::VNNI);
  EXPECT_EQ(byteDotsMode(vnni, x86, "off", error), ByteDots::Off);
  EXPECT_EQ(byteDotsMode(avx2, x86, "portable", error), ByteDots::Portable);
  EXPECT_EQ(byteDotsMode(vnni, x86, "vnni", error), ByteDots::VNNI);
  EXPECT_TRUE(error.empty()) << error;
  // VNNI asked of a CPU without it, and a value that is no mode: errors
  // that name the variable.
  EXPECT_FALSE(byteDotsMode(avx2, x86, "vnni", error));
  EXPECT_NE(error.find("GPTQ_JIT_BYTE_DOTS=vnni"), std::string::npos) << error;
  error.clear();
  EXPECT_FALSE(byteDotsMode(vnni, x86, "yes", error));
  EXPECT_NE(error.find("GPTQ_JIT_BYTE_DOTS='yes'"), std::string::npos) << error;
}

TEST(ByteDotProducts, VNNIBodyIsTheIntrinsicAndInlinable) {
  LLVMContext context;
  std::unique_ptr<Module> m = parseLLVMIR(context, dotModule());
  ASSERT_EQ(specializeByteDotProducts(*m, ByteDots::VNNI), 2u);
  EXPECT_EQ(predicateAnswer(*m), std::optional<bool>(true));
  EXPECT_FALSE(verifyModule(*m, &errs()));
  Function *f = m->getFunction("__gptq_dot4");
  ASSERT_TRUE(f && !f->isDeclaration());
  // The intrinsic on the three arguments, in order (cast to the types it
  // declares where those differ), its result returned: no other
  // instruction.
  IntrinsicInst *dot = nullptr;
  for (Instruction &inst : f->front()) {
    if (auto *intrinsic = dyn_cast<IntrinsicInst>(&inst)) {
      EXPECT_FALSE(dot);
      dot = intrinsic;
      continue;
    }
    EXPECT_TRUE(isa<BitCastInst>(&inst) || isa<ReturnInst>(&inst))
        << inst.getOpcodeName();
  }
  ASSERT_TRUE(dot);
  EXPECT_EQ(dot->getIntrinsicID(), Intrinsic::x86_avx512_vpdpbusd_512);
  for (unsigned i = 0; i < 3; ++i) {
    Value *operand = dot->getArgOperand(i);
    if (auto *cast = dyn_cast<BitCastInst>(operand))
      operand = cast->getOperand(0);
    EXPECT_EQ(operand, f->getArg(i));
  }
  Value *returned =
      cast<ReturnInst>(f->front().getTerminator())->getReturnValue();
  if (auto *cast = dyn_cast<BitCastInst>(returned))
    returned = cast->getOperand(0);
  EXPECT_EQ(returned, dot);
  EXPECT_TRUE(f->hasFnAttribute(Attribute::AlwaysInline));
  EXPECT_FALSE(f->hasFnAttribute(Attribute::NoInline));
  EXPECT_TRUE(f->hasLocalLinkage());
  CallInst *call = userCall(*m);
  ASSERT_TRUE(call);
  EXPECT_FALSE(call->hasFnAttr(Attribute::NoInline));
}

TEST(ByteDotProducts, PortableBodyKeptAndInlinable) {
  LLVMContext context;
  std::unique_ptr<Module> m = parseLLVMIR(context, dotModule());
  size_t before = m->getFunction("__gptq_dot4")->front().size();
  ASSERT_EQ(specializeByteDotProducts(*m, ByteDots::Portable), 2u);
  EXPECT_EQ(predicateAnswer(*m), std::optional<bool>(true));
  EXPECT_FALSE(verifyModule(*m, &errs()));
  Function *f = m->getFunction("__gptq_dot4");
  EXPECT_EQ(f->front().size(), before);
  for (Instruction &inst : f->front())
    EXPECT_FALSE(isa<IntrinsicInst>(&inst) &&
                 cast<IntrinsicInst>(&inst)->getIntrinsicID() ==
                     Intrinsic::x86_avx512_vpdpbusd_512);
  EXPECT_TRUE(f->hasFnAttribute(Attribute::AlwaysInline));
  EXPECT_FALSE(f->hasFnAttribute(Attribute::NoInline));
  EXPECT_FALSE(userCall(*m)->hasFnAttr(Attribute::NoInline));
}

TEST(ByteDotProducts, OffAnswersFalseAndKeepsThePortableBody) {
  LLVMContext context;
  std::unique_ptr<Module> m = parseLLVMIR(context, dotModule());
  size_t before = m->getFunction("__gptq_dot4")->front().size();
  ASSERT_EQ(specializeByteDotProducts(*m, ByteDots::Off), 2u);
  EXPECT_FALSE(verifyModule(*m, &errs()));
  EXPECT_EQ(predicateAnswer(*m), std::optional<bool>(false));
  EXPECT_EQ(m->getFunction("__gptq_dot4")->front().size(), before);
}

TEST(ByteDotProducts, OtherSignatureLeftAlone) {
  LLVMContext context;
  std::unique_ptr<Module> m = parseLLVMIR(context, dotModule(/*lanes=*/8));
  std::string before;
  raw_string_ostream(before) << *m->getFunction("__gptq_dot4");
  // Only the predicate, which has the kernels' signature.
  EXPECT_EQ(specializeByteDotProducts(*m, ByteDots::VNNI), 1u);
  std::string after;
  raw_string_ostream(after) << *m->getFunction("__gptq_dot4");
  EXPECT_EQ(before, after);
}

TEST(ByteDotProducts, ModuleWithoutTheFunctionUnchanged) {
  LLVMContext context;
  std::unique_ptr<Module> m =
      parseLLVMIR(context, "define i32 @f(i32 %x) {\n  ret i32 %x\n}\n"
                     "declare <16 x i32> @__gptq_dot4(<16 x i32>, "
                     "<16 x i32>, <16 x i32>)\n"
                     "declare i1 @__gptq_byte_dots()\n");
  EXPECT_EQ(specializeByteDotProducts(*m, ByteDots::VNNI), 0u);
  EXPECT_TRUE(m->getFunction("__gptq_dot4")->isDeclaration());
}

} // namespace
