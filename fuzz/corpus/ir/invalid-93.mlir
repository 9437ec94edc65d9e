func.func @unpack_without_bits(%p: tensor<2x1xi32>, %n: index) {
  %c = "gptq.unpack"(%p, %n) : (tensor<2x1xi32>, index) -> tensor<2x8xi8>
  return
}
