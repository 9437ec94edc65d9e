func.func @pack_words_i64(%c: tensor<4x8xi8>) {
  %p = gptq.pack %c bits 4 : tensor<4x8xi8> -> tensor<4x1xi64>
  return
}
