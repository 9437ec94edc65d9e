func.func @pack_rows(%c: tensor<4x8xi8>) {
  %p = gptq.pack %c bits 4 : tensor<4x8xi8> -> tensor<2x1xi32>
  return
}
