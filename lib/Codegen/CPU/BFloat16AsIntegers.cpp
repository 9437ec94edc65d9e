//===- BFloat16AsIntegers.cpp - Moved bfloat16 values as 16-bit integers --===//

#include "gptq/Codegen/CPU/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQBFLOAT16ASINTEGERS
#include "gptq/Codegen/CPU/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {
/// `type` with bf16 replaced by i16: scalars, vectors and LLVM arrays of
/// them; null when `type` holds no bf16.
Type asIntegers(Type type) {
  MLIRContext *ctx = type.getContext();
  if (isa<BFloat16Type>(type))
    return IntegerType::get(ctx, 16);
  if (auto vector = dyn_cast<VectorType>(type))
    return isa<BFloat16Type>(vector.getElementType())
               ? vector.clone(IntegerType::get(ctx, 16))
               : Type();
  if (auto array = dyn_cast<LLVM::LLVMArrayType>(type))
    if (Type element = asIntegers(array.getElementType()))
      return LLVM::LLVMArrayType::get(element, array.getNumElements());
  return Type();
}

/// Ops that only move their bits (memory, aggregates, lanes, choices, and
/// constants): they work alike on i16, and their bf16 operands and results
/// become i16.
bool movesBits(Operation *op) {
  if (auto constant = dyn_cast<LLVM::ConstantOp>(op))
    return isa<DenseElementsAttr, FloatAttr>(constant.getValue());
  return isa<LLVM::LoadOp, LLVM::StoreOp, LLVM::MaskedLoadOp,
             LLVM::MaskedStoreOp, LLVM::InsertValueOp, LLVM::ExtractValueOp,
             LLVM::InsertElementOp, LLVM::ExtractElementOp,
             LLVM::ShuffleVectorOp, LLVM::SelectOp, LLVM::BitcastOp,
             LLVM::ZeroOp, LLVM::UndefOp, LLVM::PoisonOp, LLVM::FreezeOp,
             LLVM::BrOp, LLVM::CondBrOp, LLVM::SwitchOp>(op);
}

/// Whether a value of `type` can be bitcast (it is not an aggregate).
bool bitcastable(Type type) { return !isa<LLVM::LLVMArrayType>(type); }

struct GPTQBFloat16AsIntegersPass
    : gptq::impl::GPTQBFloat16AsIntegersBase<GPTQBFloat16AsIntegersPass> {
  void runOnOperation() override {
    getOperation()->walk([&](LLVM::LLVMFuncOp func) {
      if (!func.getBody().empty())
        convert(func);
    });
  }

  /// Whether every bitcast the conversion needs can be made: no aggregate of
  /// bf16 passes between an op that moves bits and one that does not (or
  /// an entry block's argument). A function that fails this is left as is.
  static bool convertible(LLVM::LLVMFuncOp func) {
    WalkResult result = func.walk([](Operation *op) {
      if (movesBits(op)) {
        for (Value operand : op->getOperands()) {
          auto argument = dyn_cast<BlockArgument>(operand);
          if (argument && argument.getOwner()->isEntryBlock() &&
              asIntegers(argument.getType()) &&
              !bitcastable(argument.getType()))
            return WalkResult::interrupt();
        }
        return WalkResult::advance();
      }
      for (Type type : op->getOperandTypes())
        if (asIntegers(type) && !bitcastable(type))
          return WalkResult::interrupt();
      for (Type type : op->getResultTypes())
        if (asIntegers(type) && !bitcastable(type) && !op->use_empty())
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    return !result.wasInterrupted();
  }

  void convert(LLVM::LLVMFuncOp func) {
    if (!convertible(func))
      return;
    // The values that move bits take the integer type: block arguments
    // past the entry block (the function's own arguments keep theirs) and
    // the results of ops that move bits.
    llvm::DenseMap<Value, Type> original;
    auto retype = [&](Value value) {
      if (Type type = asIntegers(value.getType())) {
        original[value] = value.getType();
        value.setType(type);
      }
    };
    func.walk([&](Block *block) {
      if (!block->isEntryBlock())
        for (BlockArgument argument : block->getArguments())
          retype(argument);
    });
    func.walk([&](Operation *op) {
      if (!movesBits(op))
        return;
      for (Value result : op->getResults())
        retype(result);
      // A constant keeps its bits as i16.
      auto constant = dyn_cast<LLVM::ConstantOp>(op);
      if (!constant || !original.count(constant.getResult()))
        return;
      Type i16 = IntegerType::get(op->getContext(), 16);
      if (auto dense = dyn_cast<DenseElementsAttr>(constant.getValue())) {
        if (isa<BFloat16Type>(dense.getElementType()))
          constant.setValueAttr(dense.bitcast(i16));
      } else if (auto scalar = dyn_cast<FloatAttr>(constant.getValue())) {
        if (isa<BFloat16Type>(scalar.getType()))
          constant.setValueAttr(
              IntegerAttr::get(i16, scalar.getValue().bitcastToAPInt()));
      }
    });

    // Where an operand's type no longer is the one its op takes, a bitcast
    // converts it: to i16 into ops that move bits, back to bf16 into ops
    // that compute. The ops are listed first, so that the bitcasts made on
    // the way are not visited.
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) { ops.push_back(op); });
    for (Operation *op : ops) {
      bool moves = movesBits(op);
      for (OpOperand &operand : op->getOpOperands()) {
        Value value = operand.get();
        Type want;
        if (moves) {
          want = asIntegers(value.getType());
        } else if (auto it = original.find(value); it != original.end()) {
          want = it->second;
        }
        if (!want || want == value.getType())
          continue;
        OpBuilder builder(op);
        operand.set(
            LLVM::BitcastOp::create(builder, op->getLoc(), want, value));
      }
    }

    // Bitcasts between equal types (a bf16 vector read as i16) are gone.
    func.walk([](LLVM::BitcastOp cast) {
      if (cast.getArg().getType() == cast.getType()) {
        cast.replaceAllUsesWith(cast.getArg());
        cast.erase();
      }
    });
  }
};
} // namespace
