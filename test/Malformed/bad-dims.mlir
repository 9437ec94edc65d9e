// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// A permutation dimension that is not an integer.

func.func @f(%w: tensor<4x8xf32>, %p: tensor<8xi64>) {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: custom op 'gptq.permute' expected integer value
  %r = gptq.permute %w by %p dims [one] : tensor<4x8xf32>, tensor<8xi64>
  return
}
