// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// A function body without return.

func.func @f(%h: tensor<4x4xf32>) {
  // CHECK: :[[@LINE+1]]:8: error: block with no terminator
  %p = gptq.act_order %h : tensor<4x4xf32> -> tensor<4xi64>
}
