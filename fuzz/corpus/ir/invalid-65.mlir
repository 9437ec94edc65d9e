func.func @pack_bits_nine(%c: tensor<4x8xi8>) {
  %p = gptq.pack %c bits 9 : tensor<4x8xi8> -> tensor<4x3xi32>
  return
}
