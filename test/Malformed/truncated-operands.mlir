// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// gptq.quantize_layer cut off after its first operand.

// CHECK: :[[@LINE+2]]:{{[0-9]+}}: error: expected ','
func.func @f(%w: tensor<4x8xf32>) {
  %c, %s, %z, %g, %l, %ok = gptq.quantize_layer %w
}
