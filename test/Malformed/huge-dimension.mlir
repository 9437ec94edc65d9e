// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// A dimension that does not fit in 64 bits.

// CHECK: :[[@LINE+1]]:25: error: invalid dimension
func.func @f(%h: tensor<99999999999999999999x4xf32>) {
  return
}
