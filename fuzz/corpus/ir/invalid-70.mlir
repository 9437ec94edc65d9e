func.func @unpack_bits_range(%p: tensor<4x1xi32>, %n: index) {
  %c = gptq.unpack %p columns %n bits 16 : tensor<4x1xi32> -> tensor<4x2xi8>
  return
}
