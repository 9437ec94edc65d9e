func.func @dequantize_codes_ui8(%c: tensor<4x8xui8>, %s: tensor<4x1xf32>, %g: tensor<8xi32>) {
  %w = gptq.dequantize %c, %s, %s, %g : tensor<4x8xui8>, tensor<4x1xf32>, tensor<8xi32> -> tensor<4x8xf32>
  return
}
