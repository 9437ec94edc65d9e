func.func @pack_bits_zero(%c: tensor<4x8xi8>) {
  %p = gptq.pack %c bits 0 : tensor<4x8xi8> -> tensor<4x1xi32>
  return
}
