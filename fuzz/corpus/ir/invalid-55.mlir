func.func @dequantize_result_rows(%c: tensor<4x8xi8>, %s: tensor<4x1xf32>, %g: tensor<8xi32>) {
  %w = gptq.dequantize %c, %s, %s, %g : tensor<4x8xi8>, tensor<4x1xf32>, tensor<8xi32> -> tensor<5x8xf32>
  return
}
