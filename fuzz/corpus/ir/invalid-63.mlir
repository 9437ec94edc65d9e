func.func @pack_words(%c: tensor<4x11xi8>) {
  %p = gptq.pack %c bits 3 : tensor<4x11xi8> -> tensor<4x1xi32>
  return
}
