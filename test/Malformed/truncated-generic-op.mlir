// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// The file ends inside the operand list of a generic op.

// CHECK: :[[@LINE+2]]:{{[0-9]+}}: error: expected ')' to end operand list
func.func @f(%h: tensor<4x4xf32>) {
  %p = "gptq.act_order"(%h