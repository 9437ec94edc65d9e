// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// The file ends in the middle of a tensor type.

// CHECK: :[[@LINE+2]]:{{[0-9]+}}: error: expected non-function type
func.func @f(%h: tensor<4x4xf32>) {
  %p = gptq.act_order %h : tensor<4x