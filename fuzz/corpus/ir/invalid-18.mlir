func.func @permute_duplicate(%h: tensor<8x8xf32>, %p: tensor<8xi64>) {
  %r = gptq.permute %h by %p dims [1, 0, 1] : tensor<8x8xf32>, tensor<8xi64>
  return
}
