func.func @quantize_blocks_scales_rows(%w: tensor<4x8xf32>, %u: tensor<8x8xf32>, %s: tensor<3x1xf32>, %g: tensor<8xi32>) {
  %c, %s1, %z1, %l = gptq.quantize_blocks %w, %u grid(%s, %s, %g : tensor<3x1xf32>, tensor<3x1xf32>, tensor<8xi32>) {config = #gptq.config<>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xi8>, tensor<3x1xf32>
  return
}
