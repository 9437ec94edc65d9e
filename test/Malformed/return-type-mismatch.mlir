// RUN: not gptq-opt %s 2>&1 | FileCheck %s
// RUN: not gptq-opt %s --gptq-lower-to-cpu-pipeline 2>&1 | FileCheck %s

// A function returning a type other than the one it declares.

func.func @f(%h: tensor<4x4xf32>) -> tensor<4xi32> {
  %p = gptq.act_order %h : tensor<4x4xf32> -> tensor<4xi64>
  // CHECK: :[[@LINE+1]]:3: error: type of return operand 0 ('tensor<4xi64>') doesn't match function result type ('tensor<4xi32>') in function @f
  return %p : tensor<4xi64>
}
