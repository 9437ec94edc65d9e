func.func @unpack_rows(%p: tensor<4x1xi32>, %n: index) {
  %c = gptq.unpack %p columns %n bits 4 : tensor<4x1xi32> -> tensor<3x8xi8>
  return
}
