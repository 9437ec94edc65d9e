//===- OpsTest.cpp - gptq ops through the C++ API -------------------------===//

#include "gptq/Dialect/GPTQ/IR/GPTQ.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringMap.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::gptq;

namespace {
/// A module with every gptq op, optional operands both present and absent.
constexpr const char *kEveryOp = R"mlir(
func.func @every_op(%x: tensor<2x8x16xf32>, %h0: tensor<16x16xf32>, %n0: i64,
                    %w: tensor<4x16xf32>, %p: f32)
    -> (tensor<4x16xf32>, tensor<4x16xi8>, f32, i1) {
  %h, %n = gptq.hessian_accumulate %x into %h0 count %n0
      : tensor<2x8x16xf32>, tensor<16x16xf32>
  %wm = gptq.mask_dead_inputs %w, %h : tensor<4x16xf32>, tensor<16x16xf32>
  %perm = gptq.act_order %h : tensor<16x16xf32> -> tensor<16xi64>
  %wp = gptq.permute %wm by %perm dims [1] : tensor<4x16xf32>, tensor<16xi64>
  %hp = gptq.permute %h by %perm dims [0, 1]
      : tensor<16x16xf32>, tensor<16xi64>
  %u, %ok = gptq.damped_cholesky %hp percdamp(%p) : tensor<16x16xf32>
  %s0, %z0 = gptq.grid %wp {config = #gptq.config<group_size = 8>}
      : tensor<4x16xf32> -> tensor<4x2xf32>
  %c16 = arith.constant 16 : index
  %g = gptq.group_index %c16 perm(%perm : tensor<16xi64>)
      {config = #gptq.config<group_size = 8, act_order = true>} : tensor<16xi32>
  %gs = gptq.group_index %c16 {config = #gptq.config<group_size = 8>}
      : tensor<16xi32>
  %c, %s, %z, %l = gptq.quantize_blocks %wp, %u
      {config = #gptq.config<group_size = 8>}
      : tensor<4x16xf32>, tensor<16x16xf32> -> tensor<4x16xi8>, tensor<4x2xf32>
  %c2, %s2, %z2, %l2 = gptq.quantize_blocks %wp, %u
      grid(%s0, %z0, %gs : tensor<4x2xf32>, tensor<4x2xf32>, tensor<16xi32>)
      {config = #gptq.config<group_size = 8, static_groups = true>}
      : tensor<4x16xf32>, tensor<16x16xf32> -> tensor<4x16xi8>, tensor<4x2xf32>
  %co = gptq.permute %c by %perm inverse dims [1]
      : tensor<4x16xi8>, tensor<16xi64>
  %d = gptq.dequantize %co, %s, %z, %g
      : tensor<4x16xi8>, tensor<4x2xf32>, tensor<16xi32> -> tensor<4x16xf32>
  %pk = gptq.pack %co bits 3 : tensor<4x16xi8> -> tensor<4x2xi32>
  %up = gptq.unpack %pk columns %c16 bits 3 : tensor<4x2xi32> -> tensor<4x16xi8>
  %qc, %qs, %qz, %qg, %ql, %qok = gptq.quantize_layer %w, %h percdamp(%p)
      {config = #gptq.config<bits = 3, group_size = 8, act_order = true>}
      : tensor<4x16xf32>, tensor<16x16xf32>
      -> tensor<4x16xi8>, tensor<4x2xf32>, tensor<16xi32>
  %rc, %rs, %rz, %rg, %rl, %rok = gptq.quantize_layer %w, %h
      {config = #gptq.config<>}
      : tensor<4x16xf32>, tensor<16x16xf32>
      -> tensor<4x16xi8>, tensor<4x1xf32>, tensor<16xi32>
  return %d, %up, %ql, %qok : tensor<4x16xf32>, tensor<4x16xi8>, f32, i1
}
)mlir";

class OpsTest : public ::testing::Test {
protected:
  OpsTest() {
    context.loadDialect<GPTQDialect, func::FuncDialect, arith::ArithDialect>();
  }

  /// Parses `text`, keeping the last diagnostic.
  OwningOpRef<ModuleOp> parse(StringRef text) {
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
      lastError = d.str();
      return success();
    });
    return parseSourceString<ModuleOp>(text, ParserConfig(&context));
  }

  /// Verifies `op`, returning the first error message ("" on success).
  std::string verifyError(Operation *op) {
    std::string message;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
      if (message.empty())
        message = d.str();
      return success();
    });
    if (succeeded(verify(op)))
      return "";
    return message.empty() ? "<no message>" : message;
  }

  static std::string print(Operation *op) {
    std::string text;
    llvm::raw_string_ostream os(text);
    op->print(os);
    return text;
  }

  RankedTensorType f32(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, Float32Type::get(&context));
  }
  RankedTensorType i(unsigned width, ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, IntegerType::get(&context, width));
  }

  MLIRContext context;
  std::string lastError;
};

TEST_F(OpsTest, ParsesAndVerifiesEveryOp) {
  OwningOpRef<ModuleOp> module = parse(kEveryOp);
  ASSERT_TRUE(module) << lastError;
  EXPECT_TRUE(succeeded(verify(*module)));
  llvm::StringMap<int> counts;
  module->walk([&](Operation *op) {
    if (isa<GPTQDialect>(op->getDialect()))
      ++counts[op->getName().getStringRef()];
  });
  for (const char *name :
       {"gptq.hessian_accumulate", "gptq.damped_cholesky", "gptq.act_order",
        "gptq.permute", "gptq.mask_dead_inputs", "gptq.grid",
        "gptq.quantize_blocks", "gptq.group_index", "gptq.dequantize",
        "gptq.pack", "gptq.unpack", "gptq.quantize_layer"})
    EXPECT_GE(counts.lookup(name), 1) << name;
  EXPECT_EQ(counts.size(), 12u);
  EXPECT_EQ(counts.lookup("gptq.permute"), 3);
  EXPECT_EQ(counts.lookup("gptq.quantize_blocks"), 2);
}

TEST_F(OpsTest, OptionalOperandsAreVisibleThroughAccessors) {
  OwningOpRef<ModuleOp> module = parse(kEveryOp);
  ASSERT_TRUE(module) << lastError;
  SmallVector<QuantizeBlocksOp> blocks;
  SmallVector<GroupIndexOp> indices;
  SmallVector<QuantizeLayerOp> layers;
  SmallVector<PermuteOp> permutes;
  module->walk([&](Operation *op) {
    if (auto b = dyn_cast<QuantizeBlocksOp>(op))
      blocks.push_back(b);
    if (auto g = dyn_cast<GroupIndexOp>(op))
      indices.push_back(g);
    if (auto l = dyn_cast<QuantizeLayerOp>(op))
      layers.push_back(l);
    if (auto p = dyn_cast<PermuteOp>(op))
      permutes.push_back(p);
  });
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_FALSE(blocks[0].getScales());
  EXPECT_FALSE(blocks[0].getGroupMap());
  EXPECT_TRUE(blocks[1].getScales());
  EXPECT_TRUE(blocks[1].getZeros());
  EXPECT_TRUE(blocks[1].getGroupMap());
  EXPECT_EQ(blocks[1].getConfig().getGroupSize(), 8);
  EXPECT_TRUE(blocks[1].getConfig().getStaticGroups());
  ASSERT_EQ(indices.size(), 2u);
  EXPECT_TRUE(indices[0].getPerm());
  EXPECT_FALSE(indices[1].getPerm());
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_TRUE(layers[0].getPercdamp());
  EXPECT_EQ(layers[0].getConfig().getBits(), 3);
  EXPECT_FALSE(layers[1].getPercdamp());
  EXPECT_EQ(layers[1].getConfig(), ConfigAttr::getDefault(&context));
  ASSERT_EQ(permutes.size(), 3u);
  EXPECT_FALSE(permutes[0].getInverse());
  EXPECT_EQ(permutes[1].getDims(), ArrayRef<int64_t>({0, 1}));
  EXPECT_TRUE(permutes[2].getInverse());
}

TEST_F(OpsTest, PrintedModuleParsesToTheSameText) {
  OwningOpRef<ModuleOp> module = parse(kEveryOp);
  ASSERT_TRUE(module) << lastError;
  std::string once = print(*module);
  OwningOpRef<ModuleOp> again = parse(once);
  ASSERT_TRUE(again) << lastError;
  EXPECT_EQ(print(*again), once);
  // The generic form parses back to the same module too.
  std::string generic;
  {
    llvm::raw_string_ostream os(generic);
    module->print(os, OpPrintingFlags().printGenericOpForm());
  }
  OwningOpRef<ModuleOp> fromGeneric = parse(generic);
  ASSERT_TRUE(fromGeneric) << lastError;
  EXPECT_EQ(print(*fromGeneric), once);
}

TEST_F(OpsTest, BuildersCreateVerifiedOps) {
  OpBuilder b(&context);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto fn = func::FuncOp::create(
      b, loc, "f",
      b.getFunctionType({f32({4, 16}), f32({16, 16}), b.getF32Type()}, {}));
  Block *body = fn.addEntryBlock();
  b.setInsertionPointToEnd(body);
  Value w = body->getArgument(0), h = body->getArgument(1),
        p = body->getArgument(2);
  auto config = ConfigAttr::getDefault(&context);

  auto layer = QuantizeLayerOp::create(b, loc, i(8, {4, 16}), f32({4, 1}),
                                       f32({4, 1}), i(32, {16}), b.getF32Type(),
                                       b.getI1Type(), w, h, p,
                                       /*bits=*/Value(), config);
  auto grid = GridOp::create(b, loc, f32({4, 1}), f32({4, 1}), w,
                             /*bits=*/Value(), config);
  auto perm = ActOrderOp::create(b, loc, i(64, {16}), h);
  auto permuted = PermuteOp::create(b, loc, f32({4, 16}), w, perm,
                                    b.getDenseI64ArrayAttr({1}),
                                    /*inverse=*/b.getUnitAttr());
  func::ReturnOp::create(b, loc);

  EXPECT_EQ(verifyError(*module), "");
  EXPECT_TRUE(layer.getPercdamp());
  EXPECT_EQ(grid.getScales().getType(), f32({4, 1}));
  EXPECT_TRUE(permuted.getInverse());

  // A grid with the wrong number of groups is caught when the module is
  // verified, with the expected and found sizes.
  b.setInsertionPoint(body->getTerminator());
  auto grouped =
      ConfigAttr::get(&context, int64_t{4}, int64_t{8}, false, false, false,
                      llvm::APFloat(0.01), int64_t{128}, false,
                      llvm::APFloat(2.4), int64_t{100}, llvm::APFloat(0.8));
  GridOp::create(b, loc, f32({4, 3}), f32({4, 3}), w, /*bits=*/Value(),
                 grouped);
  EXPECT_EQ(verifyError(*module), "'gptq.grid' op expected scales columns "
                                  "(one per group) to be 2, found 3");
}

TEST_F(OpsTest, VerifierMessagesNameExpectedAndFound) {
  struct Case {
    const char *body;
    const char *message;
  } cases[] = {
      {"%u, %ok = gptq.damped_cholesky %a percdamp(%p) : tensor<4x5xf32>",
       "expected hessian column count (square matrix) to be 4, found 5"},
      {"%q = gptq.act_order %b : tensor<5x5xf32> -> tensor<4xi64>",
       "expected permutation length (hessian size) to be 5, found 4"},
      {"%m = gptq.mask_dead_inputs %a, %b : tensor<4x5xf32>, tensor<5x5xf32>\n"
       "  %m2 = gptq.mask_dead_inputs %b, %c : tensor<5x5xf32>, "
       "tensor<4x4xf32>",
       "expected weight columns (hessian size) to be 4, found 5"},
      {"%r = gptq.permute %a by %perm dims [0, 0] : tensor<4x5xf32>, "
       "tensor<4xi64>",
       "expected distinct dimensions, found 0 twice"},
  };
  for (const Case &c : cases) {
    std::string text =
        std::string("func.func @f(%a: tensor<4x5xf32>, %b: tensor<5x5xf32>, "
                    "%c: tensor<4x4xf32>, %perm: tensor<4xi64>, %p: f32) {\n"
                    "  ") +
        c.body + "\n  return\n}\n";
    lastError.clear();
    EXPECT_FALSE(parse(text)) << c.body;
    EXPECT_NE(lastError.find(c.message), std::string::npos)
        << c.body << "\ngave: " << lastError;
  }
}

TEST_F(OpsTest, ConfigPrintsEveryKeyInOrder) {
  auto all = ConfigAttr::get(
      &context, int64_t{3}, int64_t{64}, true, true, true, llvm::APFloat(0.025),
      int64_t{32}, true, llvm::APFloat(2.0), int64_t{50}, llvm::APFloat(0.5));
  std::string text;
  llvm::raw_string_ostream os(text);
  Attribute(all).print(os);
  EXPECT_EQ(text,
            "#gptq.config<bits = 3, group_size = 64, sym = true, act_order = "
            "true, static_groups = true, percdamp = 2.500000e-02, block_size "
            "= 32, mse = true, mse_norm = 2.000000e+00, mse_grid = 50, "
            "mse_max_shrink = 5.000000e-01>");
  EXPECT_EQ(parseAttribute(text, &context), all);
  EXPECT_EQ(all.getMaxQ(), 7);
  EXPECT_EQ(all.getNumGroups(64), 1);
  EXPECT_EQ(all.getNumGroups(65), 2);
}

TEST_F(OpsTest, GetCheckedRejectsBadConfigWithMessage) {
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    message = d.str();
    return success();
  });
  auto bad = ConfigAttr::getChecked(
      [&] { return emitError(UnknownLoc::get(&context)); }, &context,
      int64_t{4}, int64_t{-1}, false, false, false, llvm::APFloat(0.01),
      int64_t{128}, false, llvm::APFloat(2.4), int64_t{100},
      llvm::APFloat(0.0));
  EXPECT_FALSE(bad);
  EXPECT_EQ(message, "expected mse_max_shrink in (0, 1], found 0.000000e+00");
}
} // namespace
