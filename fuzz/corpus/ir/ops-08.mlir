func.func @quantize_blocks_fixed_grid(%w: tensor<16x64xf32>, %u: tensor<64x64xf32>, %s: tensor<16x1xf32>, %z: tensor<16x1xf32>, %g: tensor<64xi32>, %sd: tensor<?x?xf32>, %gd: tensor<?xi32>) -> (tensor<16x64xi8>, tensor<16x1xf32>, tensor<?x?xf32>, f32) {
  %c, %s1, %z1, %l = gptq.quantize_blocks %w, %u grid(%s, %z, %g : tensor<16x1xf32>, tensor<16x1xf32>, tensor<64xi32>) {config = #gptq.config<>} : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xi8>, tensor<16x1xf32>
  %c2, %s2, %z2, %l2 = gptq.quantize_blocks %w, %u grid(%sd, %sd, %gd : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>) {config = #gptq.config<group_size = 16, act_order = true, static_groups = true>} : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xi8>, tensor<?x?xf32>
  return %c, %s1, %z2, %l2 : tensor<16x64xi8>, tensor<16x1xf32>, tensor<?x?xf32>, f32
}
