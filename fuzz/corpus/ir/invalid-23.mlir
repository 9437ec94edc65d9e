func.func @permute_result_type(%w: tensor<4x8xf32>, %p: tensor<8xi64>) {
  %r = "gptq.permute"(%w, %p) <{dims = array<i64: 1>}> : (tensor<4x8xf32>, tensor<8xi64>) -> tensor<4x?xf32>
  return
}
