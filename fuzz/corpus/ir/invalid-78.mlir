func.func @quantize_layer_scales_groups(%w: tensor<4x8xf32>, %h: tensor<8x8xf32>) {
  %c, %s, %z, %g, %l, %ok = gptq.quantize_layer %w, %h {config = #gptq.config<group_size = 4, act_order = true>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xi8>, tensor<4x1xf32>, tensor<8xi32>
  return
}
