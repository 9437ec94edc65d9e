func.func @hessian_accumulate_not_square(%x: tensor<8x64xf32>, %h: tensor<64x32xf32>, %n: i64) {
  %h1, %n1 = gptq.hessian_accumulate %x into %h count %n : tensor<8x64xf32>, tensor<64x32xf32>
  return
}
