func.func @unpack_constant_columns(%p: tensor<4x?xi32>) {
  %n = arith.constant 10 : index
  %c = gptq.unpack %p columns %n bits 4 : tensor<4x?xi32> -> tensor<4x8xi8>
  return
}
