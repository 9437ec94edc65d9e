func.func @grid_f16(%w: tensor<4x8xf16>) {
  %s, %z = gptq.grid %w {config = #gptq.config<>} : tensor<4x8xf16> -> tensor<4x1xf32>
  return
}
