// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// An attribute of a dialect gptq-opt does not know.

// CHECK: :[[@LINE+1]]:39: error: {{.*}}attribute created with unregistered dialect
func.func @f() attributes {c = #gptqx.config<bits = 3>} {
  return
}
