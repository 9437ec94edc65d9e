//===- ByteDotProducts.cpp - Kernel byte dot products as VNNI -------------===//

#include "gptq/Execution/ByteDotProducts.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsX86.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/TargetParser/Triple.h"

#include <utility>

using namespace llvm;

namespace {
constexpr const char *kDot = "__gptq_dot4";
constexpr const char *kPredicate = "__gptq_byte_dots";
constexpr unsigned kLanes = 16;

/// Each mode and its name in GPTQ_JIT_BYTE_DOTS.
constexpr std::pair<mlir::gptq::ByteDots, const char *> kModeNames[] = {
    {mlir::gptq::ByteDots::Off, "off"},
    {mlir::gptq::ByteDots::Portable, "portable"},
    {mlir::gptq::ByteDots::VNNI, "vnni"},
};

/// Lets `f` and its calls be inlined (the kernels mark both never to be).
void makeInlinable(Function &f) {
  f.removeFnAttr(Attribute::NoInline);
  f.addFnAttr(Attribute::AlwaysInline);
  for (User *user : f.users())
    if (auto *call = dyn_cast<CallBase>(user))
      call->removeFnAttr(Attribute::NoInline);
}

/// Replaces `f`'s body by a fresh entry block (a local definition).
BasicBlock *freshBody(Function &f) {
  f.deleteBody();
  // deleteBody made it a declaration; it is defined here, locally.
  f.setLinkage(GlobalValue::InternalLinkage);
  return BasicBlock::Create(f.getContext(), "entry", &f);
}

bool specializePredicate(Module &m, mlir::gptq::ByteDots mode) {
  Function *f = m.getFunction(kPredicate);
  if (!f || f->isDeclaration())
    return false;
  FunctionType *type = f->getFunctionType();
  if (!type->getReturnType()->isIntegerTy(1) || type->getNumParams() != 0)
    return false;
  IRBuilder<> b(freshBody(*f));
  b.CreateRet(b.getInt1(mode != mlir::gptq::ByteDots::Off));
  makeInlinable(*f);
  return true;
}

bool specializeDot(Module &m, mlir::gptq::ByteDots mode) {
  Function *f = m.getFunction(kDot);
  if (!f || f->isDeclaration())
    return false;
  // (<16 x i32>, <16 x i32>, <16 x i32>) -> <16 x i32>, as the kernels
  // define it; anything else is left alone.
  auto *lanes = FixedVectorType::get(Type::getInt32Ty(m.getContext()), kLanes);
  FunctionType *type = f->getFunctionType();
  if (type->getReturnType() != lanes || type->getNumParams() != 3 ||
      llvm::any_of(type->params(), [&](Type *t) { return t != lanes; }))
    return false;
  if (mode == mlir::gptq::ByteDots::VNNI) {
    // The intrinsic's byte operands are <16 x i32> in some LLVM versions,
    // <64 x i8> in others: the same bits, cast to what it declares.
    Function *intrinsic = Intrinsic::getOrInsertDeclaration(
        &m, Intrinsic::x86_avx512_vpdpbusd_512);
    FunctionType *declared = intrinsic->getFunctionType();
    IRBuilder<> b(freshBody(*f));
    SmallVector<Value *> args;
    for (Argument &arg : f->args())
      args.push_back(
          b.CreateBitCast(&arg, declared->getParamType(arg.getArgNo())));
    Value *dot = b.CreateCall(intrinsic, args);
    b.CreateRet(b.CreateBitCast(dot, lanes));
  }
  makeInlinable(*f);
  return true;
}
} // namespace

bool mlir::gptq::targetHasByteDotProducts(StringRef features,
                                          StringRef triple) {
  if (!Triple(triple).isX86())
    return false;
  SmallVector<StringRef> names;
  features.split(names, ',');
  bool vnni = false, bw = false;
  for (StringRef name : names) {
    vnni |= name == "+avx512vnni";
    bw |= name == "+avx512bw";
  }
  return vnni && bw;
}

std::optional<mlir::gptq::ByteDots>
mlir::gptq::byteDotsMode(StringRef features, StringRef triple,
                         const char *environment, std::string &error) {
  bool vnni = targetHasByteDotProducts(features, triple);
  if (!environment || !*environment)
    return vnni ? ByteDots::VNNI : ByteDots::Off;
  std::optional<ByteDots> mode;
  for (auto [candidate, name] : kModeNames)
    if (StringRef(environment) == name)
      mode = candidate;
  if (!mode) {
    error = "GPTQ_JIT_BYTE_DOTS='" + std::string(environment) +
            "': expected off, portable or vnni";
    return std::nullopt;
  }
  if (*mode == ByteDots::VNNI && !vnni) {
    error = "GPTQ_JIT_BYTE_DOTS=vnni: the target CPU has no AVX-512 VNNI "
            "(and AVX-512BW)";
    return std::nullopt;
  }
  return mode;
}

unsigned mlir::gptq::specializeByteDotProducts(Module &m, ByteDots mode) {
  return unsigned(specializePredicate(m, mode)) +
         unsigned(specializeDot(m, mode));
}

StringRef mlir::gptq::byteDotsName(ByteDots mode) {
  for (auto [candidate, name] : kModeNames)
    if (candidate == mode)
      return name;
  llvm_unreachable("every mode has a name");
}
