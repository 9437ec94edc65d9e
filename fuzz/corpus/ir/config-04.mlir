func.func @on_op(%w: tensor<4x32xf32>) -> tensor<4x2xf32> {
  %s, %z = gptq.grid %w {config = #gptq.config<bits = 3, group_size = 16, mse = true, mse_grid = 20>} : tensor<4x32xf32> -> tensor<4x2xf32>
  return %s : tensor<4x2xf32>
}
