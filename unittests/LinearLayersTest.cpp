//===- LinearLayersTest.cpp - The linear-layer analysis through its API ---===//

#include "gptq/Quantize/LinearLayers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::gptq;

namespace {

/// Two layers in sequence, then an attention-like product of two
/// activations: the first with a named weight stored in x out behind a
/// linalg.transpose, the second reading an ml_program.global out x in.
constexpr const char *kModel = R"mlir(
ml_program.global private @fc2(dense<1.0> : tensor<3x5xf32>) : tensor<3x5xf32>
func.func @f(%x: tensor<2x4xf32>, %a: tensor<2x5xf32>, %b: tensor<2x3xf32>,
             %s: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %w1 = arith.constant dense<2.0> : tensor<5x4xf32> loc("layers.7.fc1")
  %e = tensor.empty() : tensor<4x5xf32>
  %t = linalg.transpose ins(%w1 : tensor<5x4xf32>) outs(%e : tensor<4x5xf32>)
      permutation = [1, 0]
  %h = linalg.matmul ins(%x, %t : tensor<2x4xf32>, tensor<4x5xf32>)
      outs(%a : tensor<2x5xf32>) -> tensor<2x5xf32>
  %w2 = ml_program.global_load_const @fc2 : tensor<3x5xf32>
  %y = linalg.matmul indexing_maps = [
      affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>,
      affine_map<(m, n, k) -> (m, n)>]
      ins(%h, %w2 : tensor<2x5xf32>, tensor<3x5xf32>)
      outs(%b : tensor<2x3xf32>) -> tensor<2x3xf32>
  %z = linalg.matmul indexing_maps = [
      affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>,
      affine_map<(m, n, k) -> (m, n)>]
      ins(%y, %y : tensor<2x3xf32>, tensor<2x3xf32>)
      outs(%s : tensor<2x2xf32>) -> tensor<2x2xf32>
  return %z : tensor<2x2xf32>
}
)mlir";

struct LinearLayersTest : ::testing::Test {
  LinearLayersTest() {
    context.loadDialect<arith::ArithDialect, func::FuncDialect,
                        linalg::LinalgDialect, ml_program::MLProgramDialect,
                        tensor::TensorDialect>();
  }
  MLIRContext context;
};

TEST_F(LinearLayersTest, FindsLayersWithTheirWeightsShapesAndInputs) {
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(kModel, ParserConfig(&context));
  ASSERT_TRUE(module);
  LinearLayers linears(*module);
  ASSERT_EQ(linears.size(), 2u);
  auto func = cast<func::FuncOp>(module->lookupSymbol("f"));

  const LinearLayer &fc1 = linears.getLayers()[0];
  EXPECT_EQ(fc1.name, "layers.7.fc1");
  EXPECT_FALSE(fc1.generatedName);
  EXPECT_EQ(fc1.block, std::optional<int64_t>(7));
  EXPECT_EQ(fc1.outFeatures, 5);
  EXPECT_EQ(fc1.inFeatures, 4);
  EXPECT_FALSE(fc1.transposed);
  EXPECT_FALSE(fc1.sharedWeight);
  EXPECT_EQ(fc1.activation, func.getArgument(0));
  EXPECT_TRUE(isa<arith::ConstantOp>(fc1.weightSource));
  EXPECT_TRUE(isa<linalg::TransposeOp>(fc1.weightOperand.getDefiningOp()));
  EXPECT_EQ(fc1.weightAttr,
            cast<arith::ConstantOp>(fc1.weightSource).getValue());
  EXPECT_EQ(fc1.weightGlobal, nullptr);

  // Named after its global; no `layers.<i>.` in it, while another layer has
  // one: no block.
  const LinearLayer &fc2 = linears.getLayers()[1];
  EXPECT_EQ(fc2.name, "fc2");
  EXPECT_FALSE(fc2.block.has_value());
  EXPECT_EQ(fc2.outFeatures, 3);
  EXPECT_EQ(fc2.inFeatures, 5);
  EXPECT_FALSE(fc2.transposed);
  EXPECT_EQ(fc2.activation, fc1.op->getResult(0));
  EXPECT_TRUE(isa<ml_program::GlobalLoadConstOp>(fc2.weightSource));
  ASSERT_NE(fc2.weightGlobal, nullptr);
  EXPECT_EQ(cast<ml_program::GlobalOp>(fc2.weightGlobal).getSymName(), "fc2");
  EXPECT_TRUE(linears.blocksFromNames());
  EXPECT_EQ(linears.getNumBlocks(), 1u);
}

TEST_F(LinearLayersTest, UnnamedLayersGetProgramOrderNamesAndDataFlowBlocks) {
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
      R"mlir(
func.func @f(%x: tensor<2x4xf32>, %a: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w = arith.constant dense<2.0> : tensor<4x4xf32>
  %h = linalg.matmul ins(%x, %w : tensor<2x4xf32>, tensor<4x4xf32>)
      outs(%a : tensor<2x4xf32>) -> tensor<2x4xf32>
  %g = linalg.matmul ins(%x, %w : tensor<2x4xf32>, tensor<4x4xf32>)
      outs(%a : tensor<2x4xf32>) -> tensor<2x4xf32>
  %y = linalg.matmul ins(%h, %w : tensor<2x4xf32>, tensor<4x4xf32>)
      outs(%g : tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
)mlir",
      ParserConfig(&context));
  ASSERT_TRUE(module);
  LinearLayers linears(*module);
  ASSERT_EQ(linears.size(), 3u);
  EXPECT_FALSE(linears.blocksFromNames());
  const char *names[] = {"linear.0", "linear.1", "linear.2"};
  int64_t blocks[] = {0, 0, 1};
  for (auto [layer, name, block] :
       llvm::zip_equal(linears.getLayers(), names, blocks)) {
    EXPECT_EQ(layer.name, name);
    EXPECT_TRUE(layer.generatedName);
    EXPECT_EQ(layer.block, std::optional<int64_t>(block));
    // linalg.matmul reads the weight as in x out.
    EXPECT_TRUE(layer.transposed);
    EXPECT_TRUE(layer.sharedWeight);
  }
  EXPECT_EQ(linears.getNumBlocks(), 2u);
}

} // namespace
