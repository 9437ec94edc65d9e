func.func @mask_f16(%w: tensor<4x8xf16>, %h: tensor<8x8xf32>) {
  %m = gptq.mask_dead_inputs %w, %h : tensor<4x8xf16>, tensor<8x8xf32>
  return
}
