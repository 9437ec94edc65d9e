func.func @grid_rows(%w: tensor<4x8xf32>) {
  %s, %z = gptq.grid %w {config = #gptq.config<>} : tensor<4x8xf32> -> tensor<5x1xf32>
  return
}
