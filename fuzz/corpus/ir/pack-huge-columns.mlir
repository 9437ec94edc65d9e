func.func @f(%c: tensor<2x4611686018427387904xi8>) -> tensor<2x1xi32> {
  %p = gptq.pack %c bits 4 : tensor<2x4611686018427387904xi8> -> tensor<2x1xi32>
  return %p : tensor<2x1xi32>
}
