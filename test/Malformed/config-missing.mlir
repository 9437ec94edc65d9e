// RUN: not gptq-opt %s 2>&1 | FileCheck %s
// RUN: not gptq-opt %s --gptq-lower-to-cpu-pipeline 2>&1 | FileCheck %s

// gptq.quantize_layer without its config.

func.func @f(%w: tensor<4x8xf32>, %h: tensor<8x8xf32>) {
  // CHECK: :[[@LINE+1]]:29: error: 'gptq.quantize_layer' op requires attribute 'config'
  %c, %s, %z, %g, %l, %ok = gptq.quantize_layer %w, %h : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xi8>, tensor<4x1xf32>, tensor<8xi32>
  return
}
