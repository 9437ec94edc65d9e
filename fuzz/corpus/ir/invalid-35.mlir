func.func @quantize_blocks_factor_size(%w: tensor<4x8xf32>, %u: tensor<16x16xf32>) {
  %c, %s, %z, %l = gptq.quantize_blocks %w, %u {config = #gptq.config<group_size = 4>} : tensor<4x8xf32>, tensor<16x16xf32> -> tensor<4x8xi8>, tensor<4x2xf32>
  return
}
