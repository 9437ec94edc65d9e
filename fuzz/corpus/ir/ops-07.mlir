func.func @quantize_blocks_dynamic_groups(%w: tensor<16x64xf32>, %u: tensor<64x64xf32>, %wd: tensor<?x?xf32>, %ud: tensor<?x?xf32>) -> (tensor<16x64xi8>, tensor<16x2xf32>, tensor<16x2xf32>, f32, tensor<?x?xi8>) {
  %c, %s, %z, %l = gptq.quantize_blocks %w, %u {config = #gptq.config<group_size = 32>} : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xi8>, tensor<16x2xf32>
  %cd, %sd, %zd, %ld = gptq.quantize_blocks %wd, %ud {config = #gptq.config<group_size = 128, block_size = 32>} : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x?xf32>
  return %c, %s, %z, %l, %cd : tensor<16x64xi8>, tensor<16x2xf32>, tensor<16x2xf32>, f32, tensor<?x?xi8>
}
