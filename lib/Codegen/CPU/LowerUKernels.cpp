//===- LowerUKernels.cpp - Calls of the prebuilt microkernel library ------===//
//
// gptq_ukernel ops on buffers become calls of the microkernel library that
// the project builds once per instruction set (lib/UKernels): the module
// keeps a declaration, the library's code is linked when the module runs.
//
//===----------------------------------------------------------------------===//

#include "gptq/Codegen/CPU/CpuIsa.h"
#include "gptq/Codegen/CPU/Passes.h"
#include "gptq/Codegen/CPU/UKernelAbi.h"
#include "gptq/Dialect/UKernel/IR/UKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/DenseMap.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQLOWERUKERNELS
#include "gptq/Codegen/CPU/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;
using namespace mlir::gptq;

namespace {
/// A buffer of the calling convention's type `abi` holding `value`: a cast
/// where the layouts agree, else a copy into a new buffer (listed in
/// `copies` with the original, to be freed, and for the destination copied
/// back, after the call).
Value abiOperand(OpBuilder &b, Location loc, Value value, MemRefType abi,
                 SmallVectorImpl<std::pair<Value, Value>> &copies) {
  auto type = cast<MemRefType>(value.getType());
  if (type == abi)
    return value;
  if (memref::CastOp::areCastCompatible(type, abi))
    return memref::CastOp::create(b, loc, abi, value);
  SmallVector<Value> sizes;
  for (int64_t i = 0; i < type.getRank(); ++i)
    sizes.push_back(memref::DimOp::create(b, loc, value, i));
  auto dense = MemRefType::get(
      SmallVector<int64_t>(type.getRank(), ShapedType::kDynamic),
      type.getElementType());
  Value copy = memref::AllocOp::create(b, loc, dense, sizes);
  memref::CopyOp::create(b, loc, value, copy);
  copies.push_back({copy, value});
  return dense == abi ? copy : memref::CastOp::create(b, loc, abi, copy);
}

struct GPTQLowerUKernelsPass
    : gptq::impl::GPTQLowerUKernelsBase<GPTQLowerUKernelsPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<CpuKernelForms> forms =
        kernelFormsOfOptions(module, cpuIsa, byteDots);
    if (failed(forms))
      return signalPassFailure();
    std::string name = ukernelMatmulSymbol(*forms);

    SmallVector<ukernel::MatmulOp> kernels;
    WalkResult walked = module.walk([&](ukernel::MatmulOp op) {
      if (op.getNumResults() != 0) {
        op.emitOpError("is still on tensors: bufferize before "
                       "gptq-lower-ukernels");
        return WalkResult::interrupt();
      }
      kernels.push_back(op);
      return WalkResult::advance();
    });
    if (walked.wasInterrupted())
      return signalPassFailure();
    if (kernels.empty())
      return;

    MLIRContext *ctx = &getContext();
    FunctionType abi = ukernelMatmulType(ctx);
    SymbolTable symbols(module);
    if (Operation *existing = symbols.lookup(name)) {
      auto fn = dyn_cast<func::FuncOp>(existing);
      if (!fn || !fn.isDeclaration() || fn.getFunctionType() != abi) {
        existing->emitError()
            << "symbol '" << name
            << "' is the microkernel library's; it must not be defined here";
        return signalPassFailure();
      }
    } else {
      OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
      auto decl = func::FuncOp::create(b, module.getLoc(), name, abi);
      decl.setPrivate();
    }

    // Empty buffers stand for the operands a variant lacks: one of each
    // type per function, made at its entry (not in a loop's body).
    DenseMap<std::pair<Operation *, Type>, Value> empties;
    for (ukernel::MatmulOp op : kernels) {
      // The isolated region the op is in (a function's body, or an
      // outlined region's): where its empty operands are made.
      Operation *fn = op->getParentWithTrait<OpTrait::IsIsolatedFromAbove>();
      auto empty = [&](unsigned index) -> Value {
        auto type = cast<MemRefType>(abi.getInput(index));
        Value &buffer = empties[{fn, type}];
        if (buffer)
          return buffer;
        OpBuilder entry = OpBuilder::atBlockBegin(&fn->getRegion(0).front());
        SmallVector<int64_t> shape(type.getRank(), 0);
        if (type.getRank() == 3)
          shape[0] = 1; // the kernel slices batch 0 of a matrix stack
        Value alloca = memref::AllocaOp::create(
            entry, fn->getLoc(), MemRefType::get(shape, type.getElementType()));
        buffer = memref::CastOp::create(entry, fn->getLoc(), type, alloca);
        return buffer;
      };
      OpBuilder b(op);
      Location loc = op.getLoc();
      SmallVector<std::pair<Value, Value>> copies;
      auto operand = [&](Value value, unsigned index) -> Value {
        if (!value)
          return empty(index);
        return abiOperand(b, loc, value, cast<MemRefType>(abi.getInput(index)),
                          copies);
      };
      unsigned halfKind = 0;
      Value bf16, f16;
      if (Value half = op.getHalf()) {
        bool isBF16 =
            cast<MemRefType>(half.getType()).getElementType().isBF16();
        halfKind = isBF16 ? kUKernelHalfBF16 : kUKernelHalfF16;
        (isBF16 ? bf16 : f16) = half;
      }
      UKernelMatmulVariant variant;
      variant.transposeLhs = op.getTransposeLhs();
      variant.transposeRhs = op.getTransposeRhs();
      variant.zeroInit = op.getZeroInit();
      variant.lowerResult = op.getLowerResult();
      variant.lowerLhs = op.getLowerLhs();
      variant.bits = op.getBits().value_or(0);
      variant.half = halfKind;
      SmallVector<Value> args = {
          operand(op.getLhs(), kUKernelMatmulLhs),
          operand(op.getRhs(), kUKernelMatmulRhs),
          operand(op.getInit(), kUKernelMatmulInit),
          arith::ConstantOp::create(
              b, loc, b.getI32IntegerAttr(ukernelMatmulFlags(variant))),
          operand(op.getPacked(), kUKernelMatmulPacked),
          operand(op.getScales(), kUKernelMatmulScales),
          operand(op.getZeros(), kUKernelMatmulZeros),
          operand(op.getGIdx(), kUKernelMatmulGroups),
          operand(bf16, kUKernelMatmulBF16),
          operand(f16, kUKernelMatmulF16)};
      func::CallOp::create(b, loc, name, TypeRange{}, args);
      // The destination's copy goes back; every copy is freed.
      for (auto [copy, original] : copies) {
        if (original == op.getInit())
          memref::CopyOp::create(b, loc, copy, original);
        memref::DeallocOp::create(b, loc, copy);
      }
      op.erase();
    }
  }
};
} // namespace
