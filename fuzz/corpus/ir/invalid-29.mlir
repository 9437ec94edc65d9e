func.func @grid_group_columns(%w: tensor<4x65xf32>) {
  %s, %z = gptq.grid %w {config = #gptq.config<group_size = 32>} : tensor<4x65xf32> -> tensor<4x2xf32>
  return
}
