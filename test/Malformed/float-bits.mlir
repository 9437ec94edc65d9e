// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// A fractional bit width.

func.func @f(%c: tensor<4x8xi8>) {
  // CHECK: :[[@LINE+1]]:30: error: floating point value not valid for specified type
  %p = gptq.pack %c bits 4.5 : tensor<4x8xi8> -> tensor<4x1xi32>
  return
}
