// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// The gptq dialect has no types.

// CHECK: :[[@LINE+1]]:24: error: dialect 'gptq' provides no type parsing hook
func.func @f(%a: !gptq.matrix) {
  return
}
