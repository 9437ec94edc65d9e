// Per-row 4-bit grids without and with the MSE search.
func.func @grids(%w: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) {
  %s0, %z0 = gptq.grid %w {config = #gptq.config<>} : tensor<?x?xf32> -> tensor<?x?xf32>
  %s1, %z1 = gptq.grid %w {config = #gptq.config<mse = true>} : tensor<?x?xf32> -> tensor<?x?xf32>
  return %s0, %z0, %s1, %z1 : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
}
