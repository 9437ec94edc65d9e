// RUN: not gptq-opt %s 2>&1 | FileCheck %s
// RUN: not gptq-opt %s --gptq-lower-to-cpu-pipeline 2>&1 | FileCheck %s

// 32-bit codes where gptq.dequantize takes 8-bit ones.

func.func @f(%c: tensor<4x8xi32>, %s: tensor<4x1xf32>, %g: tensor<8xi32>) {
  // CHECK: :[[@LINE+1]]:8: error: 'gptq.dequantize' op operand #0 must be 2D tensor of 8-bit signless integer values, but got 'tensor<4x8xi32>'
  %w = "gptq.dequantize"(%c, %s, %s, %g) : (tensor<4x8xi32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<8xi32>) -> tensor<4x8xf32>
  return
}
