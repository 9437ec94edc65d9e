func.func @hessian_accumulate_batch(%x: tensor<8x16x64xf32>, %h: tensor<64x64xf32>, %n: i64) -> (tensor<64x64xf32>, i64) {
  %h1, %n1 = gptq.hessian_accumulate %x into %h count %n : tensor<8x16x64xf32>, tensor<64x64xf32>
  return %h1, %n1 : tensor<64x64xf32>, i64
}
