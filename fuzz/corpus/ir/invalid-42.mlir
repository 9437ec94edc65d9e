func.func @quantize_blocks_static_needs_grid(%w: tensor<4x8xf32>, %u: tensor<8x8xf32>) {
  %c, %s, %z, %l = gptq.quantize_blocks %w, %u {config = #gptq.config<group_size = 4, static_groups = true>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xi8>, tensor<4x2xf32>
  return
}
