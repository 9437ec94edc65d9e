func.func @quantize_layer_grid_types(%w: tensor<4x8xf32>, %h: tensor<8x8xf32>) {
  %c, %s, %z, %g, %l, %ok = "gptq.quantize_layer"(%w, %h) <{config = #gptq.config<>, operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<4x8xf32>, tensor<8x8xf32>) -> (tensor<4x8xi8>, tensor<4x1xf32>, tensor<?x1xf32>, tensor<8xi32>, f32, i1)
  return
}
