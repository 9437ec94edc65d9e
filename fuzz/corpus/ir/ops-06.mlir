func.func @grid(%w: tensor<16x172xf32>, %wd: tensor<?x?xf32>) -> (tensor<16x1xf32>, tensor<16x3xf32>, tensor<?x?xf32>) {
  %s, %z = gptq.grid %w {config = #gptq.config<>} : tensor<16x172xf32> -> tensor<16x1xf32>
  %s2, %z2 = gptq.grid %w {config = #gptq.config<group_size = 64>} : tensor<16x172xf32> -> tensor<16x3xf32>
  %s3, %z3 = gptq.grid %wd {config = #gptq.config<bits = 3, group_size = 128, sym = true, mse = true>} : tensor<?x?xf32> -> tensor<?x?xf32>
  return %s, %s2, %z3 : tensor<16x1xf32>, tensor<16x3xf32>, tensor<?x?xf32>
}
