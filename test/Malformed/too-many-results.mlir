// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// Two results bound to gptq.act_order, which has one.

func.func @f(%h: tensor<4x4xf32>) {
  // CHECK: :[[@LINE+1]]:3: error: operation defines 1 results but was provided 2 to bind
  %p, %q = gptq.act_order %h : tensor<4x4xf32> -> tensor<4xi64>
  return
}
