func.func @dequantize(%c: tensor<16x64xi8>, %s: tensor<16x2xf32>, %z: tensor<16x2xf32>, %g: tensor<64xi32>, %cd: tensor<?x?xi8>, %sd: tensor<?x?xf32>, %gd: tensor<?xi32>) -> (tensor<16x64xf32>, tensor<?x?xf32>, tensor<?x64xf32>) {
  %w = gptq.dequantize %c, %s, %z, %g : tensor<16x64xi8>, tensor<16x2xf32>, tensor<64xi32> -> tensor<16x64xf32>
  %wd = gptq.dequantize %cd, %sd, %sd, %gd : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xi32> -> tensor<?x?xf32>
  %wm = gptq.dequantize %c, %sd, %sd, %gd : tensor<16x64xi8>, tensor<?x?xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return %w, %wd, %wm : tensor<16x64xf32>, tensor<?x?xf32>, tensor<?x64xf32>
}
