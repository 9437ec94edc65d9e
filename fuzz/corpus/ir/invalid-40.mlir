func.func @quantize_blocks_bad_segments(%w: tensor<4x8xf32>, %u: tensor<8x8xf32>) {
  %c, %s1, %z1, %l = "gptq.quantize_blocks"(%w, %u) <{config = #gptq.config<group_size = 4>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (tensor<4x8xf32>, tensor<8x8xf32>) -> (tensor<4x8xi8>, tensor<4x2xf32>, tensor<4x2xf32>, f32)
  return
}
