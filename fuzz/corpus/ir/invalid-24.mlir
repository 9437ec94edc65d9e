func.func @mask_not_square(%w: tensor<4x8xf32>, %h: tensor<8x9xf32>) {
  %m = gptq.mask_dead_inputs %w, %h : tensor<4x8xf32>, tensor<8x9xf32>
  return
}
