// RUN: not gptq-opt %s 2>&1 | FileCheck %s
// RUN: not gptq-opt %s --gptq-lower-to-cpu-pipeline 2>&1 | FileCheck %s

// gptq.mask_dead_inputs in generic form with one operand of two.

func.func @f(%w: tensor<4x8xf32>) {
  // CHECK: :[[@LINE+1]]:8: error: 'gptq.mask_dead_inputs' op expected 2 operands, but found 1
  %m = "gptq.mask_dead_inputs"(%w) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}
