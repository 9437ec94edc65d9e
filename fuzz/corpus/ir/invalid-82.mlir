func.func @quantize_layer_percdamp_f64(%w: tensor<4x8xf32>, %h: tensor<8x8xf32>, %p: f64) {
  %c, %s, %z, %g, %l, %ok = "gptq.quantize_layer"(%w, %h, %p) <{config = #gptq.config<>}> : (tensor<4x8xf32>, tensor<8x8xf32>, f64) -> (tensor<4x8xi8>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<8xi32>, f32, i1)
  return
}
