// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// An attribute the gptq dialect does not define.

// CHECK: :[[@LINE+1]]:38: error: unknown attribute `settings` in dialect `gptq`
func.func @f() attributes {c = #gptq.settings<bits = 3>} {
  return
}
