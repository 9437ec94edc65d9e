// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// A bit width that does not fit in 64 bits.

func.func @f(%c: tensor<4x8xi8>) {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: integer constant out of range for attribute
  %p = gptq.pack %c bits 99999999999999999999 : tensor<4x8xi8> -> tensor<4x1xi32>
  return
}
