// RUN: not gptq-opt %s --gptq-lower-to-cpu-pipeline 2>&1 | FileCheck %s

// Valid IR with an op the CPU pipeline cannot bufferize.

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: :[[@LINE+1]]:8: error: op was not bufferized
  %b = tosa.add %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}
