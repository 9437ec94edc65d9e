func.func @permute_dim_too_large(%w: tensor<4x8xf32>, %p: tensor<8xi64>) {
  %r = gptq.permute %w by %p dims [2] : tensor<4x8xf32>, tensor<8xi64>
  return
}
