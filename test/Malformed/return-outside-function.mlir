// RUN: not gptq-opt %s 2>&1 | FileCheck %s
// RUN: not gptq-opt %s --gptq-lower-to-cpu-pipeline 2>&1 | FileCheck %s

// A terminator at the top level of the module.

// CHECK: :[[@LINE+1]]:1: error: 'func.return' op expects parent op 'func.func'
func.return
