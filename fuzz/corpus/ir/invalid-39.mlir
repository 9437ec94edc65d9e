func.func @quantize_blocks_no_group_map(%w: tensor<4x8xf32>, %u: tensor<8x8xf32>, %s: tensor<4x1xf32>) {
  %c, %s1, %z1, %l = "gptq.quantize_blocks"(%w, %u, %s, %s) <{config = #gptq.config<>, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>}> : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>) -> (tensor<4x8xi8>, tensor<4x1xf32>, tensor<4x1xf32>, f32)
  return
}
