// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// A generic op of the gptq dialect that does not exist.

func.func @f(%h: tensor<4x4xf32>) {
  // CHECK: :[[@LINE+1]]:8: error: unregistered operation 'gptq.cholesky' found in dialect ('gptq') that does not allow unknown operations
  %p = "gptq.cholesky"(%h) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return
}
