// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// One result bound to gptq.grid, which has two.

func.func @f(%w: tensor<4x8xf32>) {
  // CHECK: :[[@LINE+1]]:3: error: operation defines 2 results but was provided 1 to bind
  %s = gptq.grid %w {config = #gptq.config<>} : tensor<4x8xf32> -> tensor<4x1xf32>
  return
}
