// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// An op the gptq dialect does not define.

func.func @f(%h: tensor<4x4xf32>) {
  // CHECK: :[[@LINE+1]]:8: error: custom op 'gptq.quantize_everything' is unknown
  %p = gptq.quantize_everything %h : tensor<4x4xf32>
  return
}
