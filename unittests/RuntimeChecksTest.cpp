//===- RuntimeChecksTest.cpp - Failed run-time checks reach the caller ----===//

#include "gptq/Runtime/Checks.h"

#include <gtest/gtest.h>


namespace {
void returns(void **) {}

void fails(void **args) {
  gptq_runtime_check_failed(static_cast<const char *>(args[0]), 0);
}

/// Calls `fails` through a nested checked call, then fails itself.
void failsAfterANestedFailure(void **args) {
  const char *inner = gptq_runtime_call_checked(fails, args);
  args[1] = const_cast<char *>(inner);
  gptq_runtime_check_failed("outer", 0);
}

TEST(RuntimeChecksTest, ReturnsNullWhenNoCheckFails) {
  EXPECT_EQ(gptq_runtime_call_checked(returns, nullptr), nullptr);
}

TEST(RuntimeChecksTest, ReturnsTheMessageOfTheFailedCheck) {
  void *args[] = {const_cast<char *>("m.mlir:1:2: gptq.permute: bad")};
  const char *message = gptq_runtime_call_checked(fails, args);
  ASSERT_NE(message, nullptr);
  EXPECT_STREQ(message, "m.mlir:1:2: gptq.permute: bad");
}

TEST(RuntimeChecksTest, NestedCallsReturnToTheInnermost) {
  void *args[] = {const_cast<char *>("inner"), nullptr};
  const char *message =
      gptq_runtime_call_checked(failsAfterANestedFailure, args);
  ASSERT_NE(message, nullptr);
  EXPECT_STREQ(message, "outer");
  ASSERT_NE(args[1], nullptr);
  EXPECT_STREQ(static_cast<const char *>(args[1]), "inner");
  // The contexts are gone: a later call starts afresh.
  EXPECT_EQ(gptq_runtime_call_checked(returns, nullptr), nullptr);
}

TEST(RuntimeChecksDeathTest, ExitsWithStatus1OutsideACheckedCall) {
  EXPECT_EXIT(gptq_runtime_check_failed("m.mlir:3:4: op: relation", 0),
              ::testing::ExitedWithCode(1),
              ": error: m.mlir:3:4: op: relation");
}

TEST(RuntimeChecksDeathTest, ExitsWithStatus1InAParallelRegion) {
  void *args[] = {nullptr};
  auto fatal = [](void **) { gptq_runtime_check_failed("parallel", 1); };
  EXPECT_EXIT(gptq_runtime_call_checked(fatal, args),
              ::testing::ExitedWithCode(1), ": error: parallel");
}

} // namespace
