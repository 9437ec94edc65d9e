// RUN: not gptq-opt %s 2>&1 | FileCheck %s
// RUN: not gptq-opt %s --gptq-lower-to-cpu-pipeline 2>&1 | FileCheck %s

// A string where the config attribute belongs.

func.func @f(%w: tensor<4x8xf32>) {
  // CHECK: :[[@LINE+1]]:12: error: invalid properties {config = "bits = 4"} for op gptq.grid: Invalid attribute `config` in property conversion
  %s, %z = "gptq.grid"(%w) <{config = "bits = 4"}> : (tensor<4x8xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>)
  return
}
