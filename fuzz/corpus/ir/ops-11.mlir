func.func @pack(%c: tensor<16x64xi8>, %c10: tensor<2x10xi8>, %c11: tensor<2x11xi8>, %cd: tensor<?x?xi8>) -> (tensor<16x8xi32>, tensor<2x1xi32>, tensor<2x2xi32>, tensor<?x?xi32>, tensor<?x7xi32>) {
  %p = gptq.pack %c bits 4 : tensor<16x64xi8> -> tensor<16x8xi32>
  %p10 = gptq.pack %c10 bits 3 : tensor<2x10xi8> -> tensor<2x1xi32>
  %p11 = gptq.pack %c11 bits 3 : tensor<2x11xi8> -> tensor<2x2xi32>
  %pd = gptq.pack %cd bits 8 : tensor<?x?xi8> -> tensor<?x?xi32>
  %p1 = gptq.pack %cd bits 1 : tensor<?x?xi8> -> tensor<?x7xi32>
  return %p, %p10, %p11, %pd, %p1 : tensor<16x8xi32>, tensor<2x1xi32>, tensor<2x2xi32>, tensor<?x?xi32>, tensor<?x7xi32>
}
