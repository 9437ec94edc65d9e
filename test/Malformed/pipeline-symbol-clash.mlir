// RUN: not gptq-opt %s --gptq-lower-to-cpu-pipeline 2>&1 | FileCheck %s

// Valid IR that defines a function with the name of a library implementation.

func.func private @__gptq_act_order(%x: i32) -> i32 {
  return %x : i32
}
func.func @f(%h: tensor<4x4xf32>) -> tensor<4xi64> {
  // CHECK: :[[@LINE+1]]:8: error: 'func.call' op operand type mismatch
  %p = gptq.act_order %h : tensor<4x4xf32> -> tensor<4xi64>
  return %p : tensor<4xi64>
}
