// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// The same SSA name defined twice.

func.func @f(%h: tensor<4x4xf32>) {
  %p = gptq.act_order %h : tensor<4x4xf32> -> tensor<4xi64>
  // CHECK: :[[@LINE+1]]:3: error: redefinition of SSA value '%p'
  %p = gptq.act_order %h : tensor<4x4xf32> -> tensor<4xi64>
  return
}
