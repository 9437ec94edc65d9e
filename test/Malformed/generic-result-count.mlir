// RUN: not gptq-opt %s 2>&1 | FileCheck %s
// RUN: not gptq-opt %s --gptq-lower-to-cpu-pipeline 2>&1 | FileCheck %s

// gptq.damped_cholesky in generic form with one result of two.

func.func @f(%h: tensor<4x4xf32>, %p: f32) {
  // CHECK: :[[@LINE+1]]:8: error: 'gptq.damped_cholesky' op expected 2 results
  %u = "gptq.damped_cholesky"(%h, %p) : (tensor<4x4xf32>, f32) -> tensor<4x4xf32>
  return
}
