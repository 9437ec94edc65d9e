func.func @quantize_layer_result_count(%w: tensor<4x8xf32>, %h: tensor<8x8xf32>) {
  %c, %s, %z, %g, %l = "gptq.quantize_layer"(%w, %h) <{config = #gptq.config<>}> : (tensor<4x8xf32>, tensor<8x8xf32>) -> (tensor<4x8xi8>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<8xi32>, f32)
  return
}
