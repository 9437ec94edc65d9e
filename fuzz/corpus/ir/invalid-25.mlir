func.func @mask_columns(%w: tensor<4x8xf32>, %h: tensor<16x16xf32>) {
  %m = gptq.mask_dead_inputs %w, %h : tensor<4x8xf32>, tensor<16x16xf32>
  return
}
