func.func @dequantize_zeros_type(%c: tensor<4x8xi8>, %s: tensor<4x1xf32>, %z: tensor<4x?xf32>, %g: tensor<8xi32>) {
  %w = "gptq.dequantize"(%c, %s, %z, %g) : (tensor<4x8xi8>, tensor<4x1xf32>, tensor<4x?xf32>, tensor<8xi32>) -> tensor<4x8xf32>
  return
}
