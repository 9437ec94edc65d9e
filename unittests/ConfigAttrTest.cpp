//===- ConfigAttrTest.cpp - #gptq.config defaults and verification --------===//

#include "gptq/Dialect/GPTQ/IR/GPTQ.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::gptq;

namespace {
class ConfigAttrTest : public ::testing::Test {
protected:
  ConfigAttrTest() { context.loadDialect<GPTQDialect>(); }

  /// Parses an attribute, returning null (and the message) on error.
  Attribute parse(StringRef text) {
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
      lastError = d.str();
      return success();
    });
    return parseAttribute(text, &context);
  }

  MLIRContext context;
  std::string lastError;
};

TEST_F(ConfigAttrTest, DefaultsAreTheReferenceDefaults) {
  ConfigAttr c = ConfigAttr::getDefault(&context);
  EXPECT_EQ(c.getBits(), 4);
  EXPECT_EQ(c.getGroupSize(), -1);
  EXPECT_FALSE(c.getSym());
  EXPECT_FALSE(c.getActOrder());
  EXPECT_FALSE(c.getStaticGroups());
  EXPECT_DOUBLE_EQ(c.getPercdampValue(), 0.01);
  EXPECT_EQ(c.getBlockSize(), 128);
  EXPECT_FALSE(c.getMse());
  EXPECT_DOUBLE_EQ(c.getMseNormValue(), 2.4);
  EXPECT_EQ(c.getMseGrid(), 100);
  EXPECT_DOUBLE_EQ(c.getMseMaxShrinkValue(), 0.8);
  EXPECT_EQ(c.getMaxQ(), 15);
}

TEST_F(ConfigAttrTest, EmptyTextGivesDefaults) {
  EXPECT_EQ(parse("#gptq.config<>"), ConfigAttr::getDefault(&context));
}

TEST_F(ConfigAttrTest, GroupsCountRaggedTail) {
  auto c = dyn_cast_or_null<ConfigAttr>(parse("#gptq.config<group_size = 64>"));
  ASSERT_TRUE(c);
  EXPECT_EQ(c.getNumGroups(172), 3);
  EXPECT_EQ(c.getNumGroups(128), 2);
  EXPECT_EQ(ConfigAttr::getDefault(&context).getNumGroups(172), 1);
}

TEST_F(ConfigAttrTest, PrintsOnlyNonDefaults) {
  Attribute a = parse("#gptq.config<bits = 3, percdamp = 0.05, sym = true>");
  ASSERT_TRUE(a);
  std::string text;
  llvm::raw_string_ostream os(text);
  a.print(os);
  EXPECT_EQ(text,
            "#gptq.config<bits = 3, sym = true, percdamp = 5.000000e-02>");
  EXPECT_EQ(parse(text), a);
}

TEST_F(ConfigAttrTest, RejectsOutOfRangeSettings) {
  struct Case {
    const char *text;
    const char *message;
  } cases[] = {
      {"#gptq.config<bits = 1>", "expected bits in [2, 8], found 1"},
      {"#gptq.config<bits = 9>", "expected bits in [2, 8], found 9"},
      {"#gptq.config<group_size = 0>", "expected group_size -1 or >= 1"},
      {"#gptq.config<percdamp = 1.0>", "expected percdamp in (0, 1)"},
      {"#gptq.config<percdamp = 0.0>", "expected percdamp in (0, 1)"},
      {"#gptq.config<block_size = 0>", "expected block_size >= 1"},
      {"#gptq.config<static_groups = true>",
       "expected a group_size >= 1 with static_groups"},
      {"#gptq.config<mse_grid = 0>", "expected mse_grid >= 1"},
      {"#gptq.config<mse_max_shrink = 1.5>",
       "expected mse_max_shrink in (0, 1]"},
      {"#gptq.config<mse_norm = -2.0>", "expected a finite mse_norm > 0"},
      {"#gptq.config<bitz = 4>", "unknown key 'bitz'"},
      {"#gptq.config<bits = 4, bits = 5>", "duplicate key 'bits'"},
      {"#gptq.config<sym = yes>", "expected 'true' or 'false'"},
  };
  for (const Case &c : cases) {
    lastError.clear();
    EXPECT_FALSE(parse(c.text)) << c.text;
    EXPECT_NE(lastError.find(c.message), std::string::npos)
        << c.text << " gave: " << lastError;
  }
}
} // namespace
