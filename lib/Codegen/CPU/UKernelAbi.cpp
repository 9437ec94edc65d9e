//===- UKernelAbi.cpp - The microkernel library's calling convention ------===//

#include "gptq/Codegen/CPU/UKernelAbi.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::gptq;

uint32_t gptq::ukernelMatmulFlags(const UKernelMatmulVariant &variant) {
  return (variant.transposeLhs ? 1u : 0u) | (variant.transposeRhs ? 2u : 0u) |
         (variant.zeroInit ? 4u : 0u) | (variant.lowerResult ? 8u : 0u) |
         (variant.lowerLhs ? 16u : 0u) | ((variant.bits & 15u) << 8) |
         ((variant.half & 3u) << 12);
}

FunctionType gptq::ukernelMatmulType(MLIRContext *ctx) {
  Builder b(ctx);
  int64_t dyn = ShapedType::kDynamic;
  auto strided = StridedLayoutAttr::get(ctx, dyn, {dyn, dyn, 1});
  Type batch = MemRefType::get({dyn, dyn, dyn}, b.getF32Type(), strided);
  auto matrix = [&](Type element) {
    return MemRefType::get({dyn, dyn}, element);
  };
  Type types[kUKernelMatmulArguments] = {
      batch,
      batch,
      batch,
      b.getI32Type(),
      matrix(b.getI32Type()),
      matrix(b.getF32Type()),
      matrix(b.getF32Type()),
      MemRefType::get({dyn}, b.getI32Type()),
      matrix(b.getBF16Type()),
      matrix(b.getF16Type())};
  return FunctionType::get(ctx, types, {});
}

std::string gptq::ukernelSymbol(StringRef kernel, CpuIsa isa) {
  std::string name = ("gptq_uk_" + kernel + "_" + cpuIsaName(isa)).str();
  for (char &c : name)
    if (c == '-')
      c = '_';
  return name;
}

std::string gptq::ukernelMatmulSymbol(const CpuKernelForms &forms) {
  return ukernelSymbol("matmul", forms.isa) +
         (forms.byteDots ? "_dots" : "_tables");
}

FunctionType gptq::ukernelCholeskyType(MLIRContext *ctx) {
  Builder b(ctx);
  int64_t dyn = ShapedType::kDynamic;
  Type matrix = MemRefType::get({dyn, dyn}, b.getF32Type());
  Type types[kUKernelCholeskyArguments] = {
      matrix, MemRefType::get({dyn}, b.getI64Type()), matrix, b.getI32Type(),
      b.getF32Type(), b.getI64Type()};
  return FunctionType::get(ctx, types, {b.getI1Type()});
}

uint32_t gptq::ukernelQuantizeFlags(const UKernelQuantizeVariant &variant) {
  return (variant.fixedGrids ? 1u : 0u) | (variant.sym ? 2u : 0u) |
         (variant.mse ? 4u : 0u) | (variant.permuted ? 8u : 0u) |
         (variant.masked ? 16u : 0u) | (variant.permuteCodes ? 32u : 0u);
}

FunctionType gptq::ukernelQuantizeType(MLIRContext *ctx) {
  Builder b(ctx);
  int64_t dyn = ShapedType::kDynamic;
  auto matrix = [&](Type element) {
    return MemRefType::get({dyn, dyn}, element);
  };
  Type f32 = b.getF32Type(), i64 = b.getI64Type();
  Type types[kUKernelQuantizeArguments] = {
      matrix(f32),
      matrix(f32),
      matrix(f32),
      matrix(f32),
      MemRefType::get({dyn}, b.getI32Type()),
      MemRefType::get({dyn}, i64),
      matrix(f32),
      matrix(b.getI8Type()),
      matrix(f32),
      matrix(f32),
      b.getI32Type(),
      i64,
      i64,
      f32,
      f32,
      i64,
      b.getF64Type()};
  return FunctionType::get(ctx, types, {f32});
}
