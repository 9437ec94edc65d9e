func.func @hessian_accumulate_features_2d(%x: tensor<16x?xf32>, %h: tensor<?x8xf32>, %n: i64) {
  %h1, %n1 = gptq.hessian_accumulate %x into %h count %n : tensor<16x?xf32>, tensor<?x8xf32>
  %x2 = tensor.empty() : tensor<16x4xf32>
  %h2 = tensor.empty() : tensor<8x8xf32>
  %h3, %n3 = gptq.hessian_accumulate %x2 into %h2 count %n : tensor<16x4xf32>, tensor<8x8xf32>
  return
}
