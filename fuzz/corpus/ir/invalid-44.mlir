func.func @quantize_blocks_result_scales_columns(%w: tensor<4x9xf32>, %u: tensor<9x9xf32>) {
  %c, %s, %z, %l = gptq.quantize_blocks %w, %u {config = #gptq.config<group_size = 4>} : tensor<4x9xf32>, tensor<9x9xf32> -> tensor<4x9xi8>, tensor<4x2xf32>
  return
}
