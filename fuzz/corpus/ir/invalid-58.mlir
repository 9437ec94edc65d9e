func.func @dequantize_g_idx_length(%c: tensor<4x8xi8>, %s: tensor<4x1xf32>, %g: tensor<9xi32>) {
  %w = gptq.dequantize %c, %s, %s, %g : tensor<4x8xi8>, tensor<4x1xf32>, tensor<9xi32> -> tensor<4x8xf32>
  return
}
