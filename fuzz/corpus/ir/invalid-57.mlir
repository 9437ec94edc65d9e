func.func @dequantize_scales_rows(%c: tensor<4x8xi8>, %s: tensor<2x1xf32>, %g: tensor<8xi32>) {
  %w = gptq.dequantize %c, %s, %s, %g : tensor<4x8xi8>, tensor<2x1xf32>, tensor<8xi32> -> tensor<4x8xf32>
  return
}
