// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// A negative dimension.

// CHECK: :[[@LINE+1]]:25: error: expected non-function type
func.func @f(%h: tensor<-1x4xf32>) {
  return
}
