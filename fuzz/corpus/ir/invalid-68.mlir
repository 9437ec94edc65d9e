func.func @unpack_words(%p: tensor<4x7xi32>, %n: index) {
  %c = gptq.unpack %p columns %n bits 4 : tensor<4x7xi32> -> tensor<4x64xi8>
  return
}
