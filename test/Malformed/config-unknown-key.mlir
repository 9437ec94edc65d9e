// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// A misspelled config key.

func.func @f(%w: tensor<4x8xf32>) {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: unknown key 'groupsize'
  %s, %z = gptq.grid %w {config = #gptq.config<groupsize = 128>} : tensor<4x8xf32> -> tensor<4x1xf32>
  return
}
