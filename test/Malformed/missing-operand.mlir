// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// gptq.dequantize without its g_idx operand.

func.func @f(%c: tensor<4x8xi8>, %s: tensor<4x1xf32>) {
  // CHECK: :[[@LINE+1]]:34: error: expected ','
  %w = gptq.dequantize %c, %s, %s : tensor<4x8xi8>, tensor<4x1xf32>, tensor<8xi32> -> tensor<4x8xf32>
  return
}
