func.func @unpack(%p: tensor<16x8xi32>, %pd: tensor<?x?xi32>, %n: index) -> (tensor<16x64xi8>, tensor<?x?xi8>, tensor<16x?xi8>) {
  %c64 = arith.constant 64 : index
  %c = gptq.unpack %p columns %c64 bits 4 : tensor<16x8xi32> -> tensor<16x64xi8>
  %cd = gptq.unpack %pd columns %n bits 3 : tensor<?x?xi32> -> tensor<?x?xi8>
  %cm = gptq.unpack %p columns %n bits 2 : tensor<16x8xi32> -> tensor<16x?xi8>
  return %c, %cd, %cm : tensor<16x64xi8>, tensor<?x?xi8>, tensor<16x?xi8>
}
