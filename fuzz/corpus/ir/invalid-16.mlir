func.func @permute_dim_negative(%w: tensor<4x8xf32>, %p: tensor<8xi64>) {
  %r = gptq.permute %w by %p dims [-1] : tensor<4x8xf32>, tensor<8xi64>
  return
}
