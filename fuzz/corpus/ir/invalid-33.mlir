func.func @grid_zeros_type(%w: tensor<4x8xf32>) {
  %s, %z = "gptq.grid"(%w) <{config = #gptq.config<>}> : (tensor<4x8xf32>) -> (tensor<4x1xf32>, tensor<?x1xf32>)
  return
}
