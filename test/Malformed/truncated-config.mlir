// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// The file ends inside a #gptq.config attribute.

// CHECK: :[[@LINE+2]]:{{[0-9]+}}: error: unbalanced '<' character in pretty dialect name
func.func @f(%w: tensor<4x8xf32>) {
  %s, %z = gptq.grid %w {config = #gptq.config<bits = 3, group_size =