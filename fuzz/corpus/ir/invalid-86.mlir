func.func @unpack_negative_columns(%p: tensor<4x1xi32>) {
  %c = arith.constant -3 : index
  %q = gptq.unpack %p columns %c bits 4 : tensor<4x1xi32> -> tensor<4x?xi8>
  return
}
