func.func @hessian_accumulate_rank(%x: tensor<2x8x16x32xf32>, %h: tensor<32x32xf32>, %n: i64) {
  %h1, %n1 = gptq.hessian_accumulate %x into %h count %n : tensor<2x8x16x32xf32>, tensor<32x32xf32>
  return
}
