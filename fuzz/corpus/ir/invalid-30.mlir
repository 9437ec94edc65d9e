func.func @grid_no_config(%w: tensor<4x8xf32>) {
  %s, %z = gptq.grid %w : tensor<4x8xf32> -> tensor<4x1xf32>
  return
}
