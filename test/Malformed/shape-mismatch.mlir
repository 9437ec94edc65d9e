// RUN: not gptq-opt %s 2>&1 | FileCheck %s
// RUN: not gptq-opt %s --gptq-lower-to-cpu-pipeline 2>&1 | FileCheck %s

// A Hessian whose size does not match the weight columns.

func.func @f(%w: tensor<4x8xf32>, %h: tensor<16x16xf32>) {
  // CHECK: :[[@LINE+1]]:29: error: 'gptq.quantize_layer' op expected weight columns (hessian size) to be 16, found 8
  %c, %s, %z, %g, %l, %ok = gptq.quantize_layer %w, %h {config = #gptq.config<>} : tensor<4x8xf32>, tensor<16x16xf32> -> tensor<4x8xi8>, tensor<4x1xf32>, tensor<8xi32>
  return
}
