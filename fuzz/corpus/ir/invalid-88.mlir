func.func @mask_result_type(%w: tensor<2x4xf32>, %h: tensor<4x4xf32>) {
  %m = "gptq.mask_dead_inputs"(%w, %h) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x?xf32>
  return
}
