// RUN: not gptq-opt %s 2>&1 | FileCheck %s
// RUN: not gptq-opt %s --gptq-lower-to-cpu-pipeline 2>&1 | FileCheck %s

// A permutation used before it is computed.

func.func @f(%h: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // CHECK: :[[@LINE+1]]:9: error: operand #1 does not dominate this use
  %hp = gptq.permute %h by %p dims [0, 1] : tensor<4x4xf32>, tensor<4xi64>
  %p = gptq.act_order %h : tensor<4x4xf32> -> tensor<4xi64>
  return %hp : tensor<4x4xf32>
}
