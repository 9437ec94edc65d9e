func.func @permute_rank0(%w: tensor<f32>, %p: tensor<1xi64>) {
  %r = gptq.permute %w by %p dims [0] : tensor<f32>, tensor<1xi64>
  return
}
