func.func @quantize_blocks_codes_i32(%w: tensor<4x8xf32>, %u: tensor<8x8xf32>) {
  %c, %s, %z, %l = gptq.quantize_blocks %w, %u {config = #gptq.config<group_size = 4>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xi32>, tensor<4x2xf32>
  return
}
