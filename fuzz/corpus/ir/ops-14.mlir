func.func @quantize_layer_dynamic(%w: tensor<?x?xf32>, %h: tensor<?x?xf32>, %p: f32, %ws: tensor<?x24xf32>) -> (tensor<?x?xi8>, tensor<?x3xf32>) {
  %c, %s, %z, %g, %l, %ok = gptq.quantize_layer %w, %h percdamp(%p) {config = #gptq.config<bits = 3, group_size = 128, sym = true, act_order = true, static_groups = true, percdamp = 0.05, block_size = 64, mse = true>} : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xi32>
  %c2, %s2, %z2, %g2, %l2, %ok2 = gptq.quantize_layer %ws, %h {config = #gptq.config<group_size = 8>} : tensor<?x24xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x3xf32>, tensor<24xi32>
  return %c, %s2 : tensor<?x?xi8>, tensor<?x3xf32>
}
