func.func @permute_perm_i32(%w: tensor<4x8xf32>, %p: tensor<8xi32>) {
  %r = gptq.permute %w by %p dims [1] : tensor<4x8xf32>, tensor<8xi32>
  return
}
