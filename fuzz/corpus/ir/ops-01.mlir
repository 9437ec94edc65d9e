func.func @hessian_accumulate_dynamic(%x: tensor<?x?xf32>, %x3: tensor<?x?x?xf32>, %xs: tensor<16x32xf32>, %h: tensor<?x?xf32>, %hs: tensor<?x32xf32>, %n: i64) -> (tensor<?x?xf32>, tensor<?x32xf32>, i64) {
  %h1, %n1 = gptq.hessian_accumulate %x into %h count %n : tensor<?x?xf32>, tensor<?x?xf32>
  %h2, %n2 = gptq.hessian_accumulate %x3 into %h1 count %n1 : tensor<?x?x?xf32>, tensor<?x?xf32>
  %h3, %n3 = gptq.hessian_accumulate %xs into %hs count %n2 : tensor<16x32xf32>, tensor<?x32xf32>
  return %h2, %h3, %n3 : tensor<?x?xf32>, tensor<?x32xf32>, i64
}
