// RUN: not gptq-opt %s --gptq-lower-to-cpu-pipeline=cholesky-block=0 2>&1 | FileCheck %s

// Valid IR, but a pipeline option out of range.

// CHECK: error: cholesky-block must be >= 1, found 0{{$}}
func.func @f(%h: tensor<4x4xf32>, %p: f32) -> tensor<4x4xf32> {
  %u, %ok = gptq.damped_cholesky %h percdamp(%p) : tensor<4x4xf32>
  return %u : tensor<4x4xf32>
}
