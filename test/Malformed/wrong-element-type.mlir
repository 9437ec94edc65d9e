// RUN: not gptq-opt %s 2>&1 | FileCheck %s
// RUN: not gptq-opt %s --gptq-lower-to-cpu-pipeline 2>&1 | FileCheck %s

// Half-precision weights, which no gptq op accepts.

func.func @f(%w: tensor<4x8xf16>, %h: tensor<8x8xf32>) {
  // CHECK: :[[@LINE+1]]:29: error: 'gptq.quantize_layer' op operand #0 must be 2D tensor of 32-bit float values, but got 'tensor<4x8xf16>'
  %c, %s, %z, %g, %l, %ok = "gptq.quantize_layer"(%w, %h) <{config = #gptq.config<>, operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (tensor<4x8xf16>, tensor<8x8xf32>) -> (tensor<4x8xi8>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<8xi32>, f32, i1)
  return
}
