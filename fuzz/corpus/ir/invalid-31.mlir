func.func @grid_config_not_config(%w: tensor<4x8xf32>) {
  %s, %z = gptq.grid %w {config = 4 : i64} : tensor<4x8xf32> -> tensor<4x1xf32>
  return
}
