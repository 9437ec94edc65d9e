// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// A 12-bit config.

func.func @f(%w: tensor<4x8xf32>, %h: tensor<8x8xf32>) {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: expected bits in [2, 8], found 12
  %c, %s, %z, %g, %l, %ok = gptq.quantize_layer %w, %h {config = #gptq.config<bits = 12>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xi8>, tensor<4x1xf32>, tensor<8xi32>
  return
}
