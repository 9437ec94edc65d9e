func.func @grid_per_row_columns(%w: tensor<4x?xf32>) {
  %s, %z = gptq.grid %w {config = #gptq.config<>} : tensor<4x?xf32> -> tensor<4x2xf32>
  return
}
