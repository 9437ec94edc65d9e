func.func @quantize_blocks_group_map_length(%w: tensor<4x8xf32>, %u: tensor<8x8xf32>, %s: tensor<4x2xf32>, %g: tensor<7xi32>) {
  %c, %s1, %z1, %l = gptq.quantize_blocks %w, %u grid(%s, %s, %g : tensor<4x2xf32>, tensor<4x2xf32>, tensor<7xi32>) {config = #gptq.config<group_size = 4, static_groups = true>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xi8>, tensor<4x2xf32>
  return
}
