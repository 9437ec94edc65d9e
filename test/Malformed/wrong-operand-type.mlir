// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// The dampening is an i32, where gptq.damped_cholesky takes an f32.

// CHECK: :[[@LINE+2]]:46: error: use of value '%p' expects different type than prior uses: 'f32' vs 'i32'
func.func @f(%h: tensor<4x4xf32>, %p: i32) {
  %u, %ok = gptq.damped_cholesky %h percdamp(%p) : tensor<4x4xf32>
  return
}
