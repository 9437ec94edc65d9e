func.func @mask_dead_inputs(%w: tensor<16x64xf32>, %h: tensor<64x64xf32>, %wd: tensor<?x?xf32>, %hd: tensor<?x?xf32>) -> (tensor<16x64xf32>, tensor<?x?xf32>) {
  %m = gptq.mask_dead_inputs %w, %h : tensor<16x64xf32>, tensor<64x64xf32>
  %md = gptq.mask_dead_inputs %wd, %hd : tensor<?x?xf32>, tensor<?x?xf32>
  return %m, %md : tensor<16x64xf32>, tensor<?x?xf32>
}
