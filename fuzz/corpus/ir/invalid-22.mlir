func.func @permute_unranked_generic(%w: tensor<*xf32>, %p: tensor<8xi64>) {
  %r = "gptq.permute"(%w, %p) <{dims = array<i64: 1>}> : (tensor<*xf32>, tensor<8xi64>) -> tensor<*xf32>
  return
}
