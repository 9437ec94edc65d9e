func.func @unpack_codes_i32(%p: tensor<4x1xi32>, %n: index) {
  %c = gptq.unpack %p columns %n bits 4 : tensor<4x1xi32> -> tensor<4x8xi32>
  return
}
