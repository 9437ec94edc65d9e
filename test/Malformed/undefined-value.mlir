// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// A use of a value that is never defined.

func.func @f() {
  // CHECK: :[[@LINE+1]]:23: error: use of undeclared SSA value name
  %p = gptq.act_order %h : tensor<4x4xf32> -> tensor<4xi64>
  return
}
