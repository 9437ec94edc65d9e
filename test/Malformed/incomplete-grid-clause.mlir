// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// The grid(...) clause of quantize_blocks with two operands of three.

func.func @f(%w: tensor<4x8xf32>, %u: tensor<8x8xf32>, %s: tensor<4x1xf32>) {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: expected ','
  %c, %s1, %z1, %l = gptq.quantize_blocks %w, %u grid(%s, %s : tensor<4x1xf32>, tensor<4x1xf32>) {config = #gptq.config<>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xi8>, tensor<4x1xf32>
  return
}
