// RUN: not gptq-opt %s 2>&1 | FileCheck %s
// RUN: not gptq-opt %s --gptq-lower-to-cpu-pipeline 2>&1 | FileCheck %s

// A gptq op written with a region.

func.func @f(%h: tensor<4x4xf32>) {
  // CHECK: :[[@LINE+1]]:8: error: 'gptq.act_order' op requires zero regions
  %p = "gptq.act_order"(%h) ({
  }) : (tensor<4x4xf32>) -> tensor<4xi64>
  return
}
