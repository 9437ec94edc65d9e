// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// The file ends inside a function body: the region is never closed.

// CHECK: error: expected operation name in quotes
func.func @f(%h: tensor<4x4xf32>) -> tensor<4xi64> {
  %p = gptq.act_order %h : tensor<4x4xf32> -> tensor<4xi64>
  return %p : tensor<4xi64>
