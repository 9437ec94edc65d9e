func.func @quantize_layer(%w: tensor<16x64xf32>, %h: tensor<64x64xf32>, %p: f32) -> (tensor<16x64xi8>, tensor<16x2xf32>, tensor<16x2xf32>, tensor<64xi32>, f32, i1, tensor<16x1xf32>) {
  %c, %s, %z, %g, %l, %ok = gptq.quantize_layer %w, %h {config = #gptq.config<group_size = 32, act_order = true>} : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xi8>, tensor<16x2xf32>, tensor<64xi32>
  %c2, %s2, %z2, %g2, %l2, %ok2 = gptq.quantize_layer %w, %h percdamp(%p) {config = #gptq.config<>} : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xi8>, tensor<16x1xf32>, tensor<64xi32>
  return %c, %s, %z, %g, %l, %ok, %s2 : tensor<16x64xi8>, tensor<16x2xf32>, tensor<16x2xf32>, tensor<64xi32>, f32, i1, tensor<16x1xf32>
}
