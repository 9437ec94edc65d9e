//===- ActivationStoreTest.cpp - Activations within a budget --------------===//

#include "gptq/Driver/ActivationStore.h"
#include "gptq/Driver/MemoryEstimate.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::gptq;

namespace {

NpyArray filled(int64_t n, float start) {
  NpyArray a = NpyArray::zeros(DType::F32, {n});
  for (int64_t i = 0; i < n; ++i)
    a.as<float>()[i] = start + float(i);
  return a;
}

TEST(ActivationStore, KeepsWithinTheBudgetAndSpillsTheRest) {
  ActivationStore store(/*budget=*/64 * 4);
  ActivationStore::Kept a, b, c;
  ASSERT_FALSE(bool(store.keep(a, filled(64, 0))));
  ASSERT_FALSE(bool(store.keep(b, filled(32, 100))));
  EXPECT_FALSE(a.spilled);
  EXPECT_TRUE(b.spilled);
  EXPECT_EQ(store.residentBytes(), 256u);
  EXPECT_EQ(store.spilledBytes(), 128u);
  // A spilled array reads back as it was.
  auto back = store.load(b);
  ASSERT_TRUE(bool(back));
  ASSERT_EQ(back->shape, std::vector<int64_t>{32});
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(back->as<float>()[i], 100.0f + float(i));
  // Released memory makes room again.
  store.release(a);
  EXPECT_EQ(store.residentBytes(), 0u);
  ASSERT_FALSE(bool(store.keep(c, filled(16, 7))));
  EXPECT_FALSE(c.spilled);
  auto inMemory = store.load(c);
  ASSERT_TRUE(bool(inMemory));
  EXPECT_EQ(inMemory->as<float>()[15], 22.0f);
  EXPECT_EQ(store.peakResidentBytes(), 256u);
  EXPECT_EQ(store.peakSpilledBytes(), 128u);
}

TEST(ActivationStore, ZeroBudgetSpillsEverything) {
  ActivationStore store(0);
  ActivationStore::Kept a;
  ASSERT_FALSE(bool(store.keep(a, filled(8, 1))));
  EXPECT_TRUE(a.spilled);
  EXPECT_EQ(store.residentBytes(), 0u);
  auto back = store.load(a);
  ASSERT_TRUE(bool(back));
  EXPECT_EQ(back->as<float>()[7], 8.0f);
}

TEST(ByteCount, ParsesSizesAndPercentages) {
  EXPECT_EQ(parseByteCount("0"), 0u);
  EXPECT_EQ(parseByteCount("1024"), 1024u);
  EXPECT_EQ(parseByteCount("2K"), 2048u);
  EXPECT_EQ(parseByteCount("512MiB"), 512ull << 20);
  EXPECT_EQ(parseByteCount("1.5G"), 3ull << 29);
  EXPECT_EQ(parseByteCount("3gb"), 3ull << 30);
  EXPECT_EQ(parseByteCount("1T"), 1ull << 40);
  EXPECT_EQ(parseByteCount("100%"), physicalMemoryBytes());
  EXPECT_EQ(parseByteCount(""), std::nullopt);
  EXPECT_EQ(parseByteCount("12X"), std::nullopt);
  EXPECT_EQ(parseByteCount("-1"), std::nullopt);
  EXPECT_EQ(parseByteCount("101%"), std::nullopt);
  EXPECT_EQ(parseByteCount("1e30"), std::nullopt);
  EXPECT_EQ(parseByteCount("G"), std::nullopt);
}

TEST(MemoryEstimate, TensorBytesTakesDynamicSizes) {
  MLIRContext context;
  Builder b(&context);
  auto t = RankedTensorType::get({ShapedType::kDynamic, ShapedType::kDynamic, 64},
                                 b.getF32Type());
  EXPECT_EQ(tensorBytes(t, /*lead=*/8, /*extent=*/512), 8u * 512 * 64 * 4);
  EXPECT_EQ(tensorBytes(RankedTensorType::get({3}, b.getBF16Type()), 1, 1), 6u);
  EXPECT_EQ(tensorBytes(b.getF32Type(), 1, 1), 0u);
  EXPECT_EQ(quantizerWorkspaceBytes(2, 4), 4u * 4 * 4 + 8 * 4 + 8);
}

TEST(MemoryEstimate, PeakIntermediatesFollowLiveness) {
  MLIRContext context;
  context.loadDialect<func::FuncDialect, linalg::LinalgDialect,
                      tensor::TensorDialect>();
  // Two 128-byte buffers at most: each add writes its destination in place,
  // %b dies at the second add, the slice is a view of %d.
  const char *source = R"mlir(
    func.func @stage(%a: tensor<4x8xf32>) -> tensor<2x8xf32> {
      %e = tensor.empty() : tensor<4x8xf32>
      %b = linalg.add ins(%a, %a : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
      %c = tensor.empty() : tensor<4x8xf32>
      %d = linalg.add ins(%b, %b : tensor<4x8xf32>, tensor<4x8xf32>) outs(%c : tensor<4x8xf32>) -> tensor<4x8xf32>
      %s = tensor.extract_slice %d[0, 0] [2, 8] [1, 1] : tensor<4x8xf32> to tensor<2x8xf32>
      return %s : tensor<2x8xf32>
    })mlir";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(module);
  auto fn = cast<func::FuncOp>(module->lookupSymbol("stage"));
  EXPECT_EQ(peakIntermediateBytes(fn, 1, 1), 256u);
}

} // namespace
