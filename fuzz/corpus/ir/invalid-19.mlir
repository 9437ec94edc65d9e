func.func @permute_size(%w: tensor<4x8xf32>, %p: tensor<4xi64>) {
  %r = gptq.permute %w by %p dims [0, 1] : tensor<4x8xf32>, tensor<4xi64>
  return
}
