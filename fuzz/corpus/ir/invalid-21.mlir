func.func @permute_unranked(%w: tensor<*xf32>, %p: tensor<8xi64>) {
  %r = gptq.permute %w by %p dims [1] : tensor<*xf32>, tensor<8xi64>
  return
}
