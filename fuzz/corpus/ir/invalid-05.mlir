func.func @hessian_accumulate_count_i32(%x: tensor<8x32xf32>, %h: tensor<32x32xf32>, %n: i32) {
  %h1, %n1 = "gptq.hessian_accumulate"(%x, %h, %n) : (tensor<8x32xf32>, tensor<32x32xf32>, i32) -> (tensor<32x32xf32>, i64)
  return
}
