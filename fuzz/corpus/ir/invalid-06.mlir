func.func @hessian_accumulate_result_type(%x: tensor<8x32xf32>, %h: tensor<32x32xf32>, %n: i64) {
  %h1, %n1 = "gptq.hessian_accumulate"(%x, %h, %n) : (tensor<8x32xf32>, tensor<32x32xf32>, i64) -> (tensor<?x?xf32>, i64)
  return
}
