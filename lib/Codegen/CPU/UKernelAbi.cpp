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

std::string gptq::ukernelMatmulSymbol(const CpuKernelForms &forms) {
  std::string name = ("gptq_uk_matmul_" + cpuIsaName(forms.isa)).str();
  for (char &c : name)
    if (c == '-')
      c = '_';
  return name + (forms.byteDots ? "_dots" : "_tables");
}
