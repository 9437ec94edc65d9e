// RUN: not gptq-opt %s 2>&1 | FileCheck %s
// RUN: not gptq-opt %s --gptq-lower-to-cpu-pipeline 2>&1 | FileCheck %s

// quantize_blocks in generic form with scales but no zeros or group map.

func.func @f(%w: tensor<4x8xf32>, %u: tensor<8x8xf32>, %s: tensor<4x1xf32>) -> tensor<4x8xi8> {
  // CHECK: :[[@LINE+1]]:22: error: 'gptq.quantize_blocks' op expected scales, zeros and group map together
  %c, %s1, %z1, %l = "gptq.quantize_blocks"(%w, %u, %s) <{config = #gptq.config<>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>}> : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x1xf32>) -> (tensor<4x8xi8>, tensor<4x1xf32>, tensor<4x1xf32>, f32)
  return %c : tensor<4x8xi8>
}
