func.func @permute_without_dims(%w: tensor<4x8xf32>, %p: tensor<8xi64>) {
  %r = "gptq.permute"(%w, %p) : (tensor<4x8xf32>, tensor<8xi64>) -> tensor<4x8xf32>
  return
}
