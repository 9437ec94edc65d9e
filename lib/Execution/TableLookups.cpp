//===- TableLookups.cpp - Kernel table lookups as x86 permutes -----------===//

#include "gptq/Execution/TableLookups.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Analysis/VectorUtils.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicsX86.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/ValueHandle.h"
#include "llvm/IR/PatternMatch.h"
#include "llvm/Transforms/Utils/Local.h"

using namespace llvm;
using namespace llvm::PatternMatch;

namespace {

constexpr unsigned kLanes = 16;

/// Lane `lane` of a lookup: extractelement(table, idx) where idx is lane
/// `lane` of `codes & 15` (zero- or sign-extended, or as it is). Sets
/// `table` and `codes` at the first lane and checks the others against them.
bool matchLane(Value *element, unsigned lane, Value *&table, Value *&codes) {
  auto *pick = dyn_cast<ExtractElementInst>(element);
  if (!pick)
    return false;
  Value *index = pick->getIndexOperand();
  if (auto *cast = dyn_cast<CastInst>(index))
    if (isa<ZExtInst, SExtInst>(cast))
      index = cast->getOperand(0);
  auto *laneOfIndex = dyn_cast<ExtractElementInst>(index);
  if (!laneOfIndex)
    return false;
  auto *laneNumber = dyn_cast<ConstantInt>(laneOfIndex->getIndexOperand());
  if (!laneNumber || laneNumber->getZExtValue() != lane)
    return false;
  Value *unmasked;
  if (!match(laneOfIndex->getVectorOperand(),
             m_c_And(m_Value(unmasked), m_SpecificInt(kLanes - 1))))
    return false;
  if (lane == 0) {
    table = pick->getVectorOperand();
    codes = unmasked;
    return true;
  }
  return table == pick->getVectorOperand() && codes == unmasked;
}

/// The lookup that `last` completes, if it is one: the lanes' inserts from
/// poison (or undef), each lane once, lane i from matchLane.
bool matchLookup(InsertElementInst *last, Value *&table, Value *&codes) {
  auto *type = dyn_cast<FixedVectorType>(last->getType());
  if (!type || type->getNumElements() != kLanes)
    return false;
  Type *element = type->getElementType();
  if (!element->isFloatTy() && !element->isIntegerTy(32))
    return false;
  SmallVector<Value *, kLanes> lanes(kLanes, nullptr);
  Value *at = last;
  while (auto *insert = dyn_cast<InsertElementInst>(at)) {
    auto *lane = dyn_cast<ConstantInt>(insert->getOperand(2));
    if (!lane || lane->getZExtValue() >= kLanes ||
        lanes[lane->getZExtValue()])
      return false;
    lanes[lane->getZExtValue()] = insert->getOperand(1);
    at = insert->getOperand(0);
  }
  if (!isa<PoisonValue, UndefValue>(at))
    return false;
  for (unsigned i = 0; i < kLanes; ++i)
    if (!lanes[i] || !matchLane(lanes[i], i, table, codes))
      return false;
  auto *codesType = dyn_cast<FixedVectorType>(codes->getType());
  return table->getType() == type && codesType &&
         codesType->getNumElements() == kLanes &&
         codesType->getElementType()->isIntegerTy(32);
}

/// The lookup of `table` at `codes` as two AVX2 permutes of eight lanes per
/// half of the codes: each reads both halves of the table at the codes' low
/// three bits, and the codes' bit 3 chooses between them.
Value *buildAVX2Lookup(IRBuilder<> &builder, Value *table, Value *codes) {
  bool isFloat = table->getType()->getScalarType()->isFloatTy();
  Intrinsic::ID id =
      isFloat ? Intrinsic::x86_avx2_permps : Intrinsic::x86_avx2_permd;
  auto half = [&](Value *v, unsigned first) {
    return builder.CreateShuffleVector(v, createSequentialMask(first, 8, 0));
  };
  Value *low = half(table, 0), *high = half(table, 8);
  Value *parts[2];
  for (int part = 0; part < 2; ++part) {
    Value *index = half(codes, 8 * part);
    Value *fromLow = builder.CreateIntrinsic(id, {}, {low, index});
    Value *fromHigh = builder.CreateIntrinsic(id, {}, {high, index});
    Value *bit3 =
        builder.CreateAnd(index, ConstantInt::get(index->getType(), 8));
    Value *isHigh =
        builder.CreateICmpNE(bit3, Constant::getNullValue(index->getType()));
    parts[part] = builder.CreateSelect(isHigh, fromHigh, fromLow);
  }
  return builder.CreateShuffleVector(parts[0], parts[1],
                                     createSequentialMask(0, kLanes, 0));
}

} // namespace

unsigned mlir::gptq::rewriteTableLookups(Module &m, TableLookupTarget target) {
  // The lookups' last inserts: inserts whose result no insert extends.
  // Held weakly: deleting one lookup's dead instructions may delete another
  // lookup that only fed its table.
  SmallVector<WeakVH> lasts;
  for (Function &f : m)
    for (BasicBlock &block : f)
      for (Instruction &inst : block)
        if (auto *insert = dyn_cast<InsertElementInst>(&inst))
          if (llvm::none_of(insert->users(), [&](User *user) {
                auto *next = dyn_cast<InsertElementInst>(user);
                return next && next->getOperand(0) == insert;
              }))
            lasts.push_back(insert);
  unsigned rewritten = 0;
  for (WeakVH &handle : lasts) {
    auto *last = dyn_cast_or_null<InsertElementInst>(handle);
    if (!last)
      continue;
    Value *table = nullptr, *codes = nullptr;
    if (!matchLookup(last, table, codes))
      continue;
    IRBuilder<> builder(last);
    Value *permuted;
    if (target == TableLookupTarget::AVX512) {
      Intrinsic::ID id = table->getType()->getScalarType()->isFloatTy()
                             ? Intrinsic::x86_avx512_permvar_sf_512
                             : Intrinsic::x86_avx512_permvar_si_512;
      permuted = builder.CreateIntrinsic(id, {}, {table, codes});
    } else {
      permuted = buildAVX2Lookup(builder, table, codes);
    }
    last->replaceAllUsesWith(permuted);
    RecursivelyDeleteTriviallyDeadInstructions(last);
    ++rewritten;
  }
  return rewritten;
}
