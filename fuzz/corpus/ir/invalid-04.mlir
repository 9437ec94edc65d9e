func.func @hessian_accumulate_f16(%x: tensor<8x32xf16>, %h: tensor<32x32xf32>, %n: i64) {
  %h1, %n1 = gptq.hessian_accumulate %x into %h count %n : tensor<8x32xf16>, tensor<32x32xf32>
  return
}
