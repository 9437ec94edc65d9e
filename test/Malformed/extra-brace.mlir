// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// A closing brace with nothing to close.

func.func @f() {
  return
}
// CHECK: error: expected operation name in quotes
}
