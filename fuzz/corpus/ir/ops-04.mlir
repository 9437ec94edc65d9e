func.func @permute(%w: tensor<16x64xf32>, %h: tensor<64x64xf32>, %p: tensor<64xi64>, %g: tensor<?xi32>, %pd: tensor<?xi64>, %c: tensor<?x3x?xi8>) -> (tensor<16x64xf32>, tensor<64x64xf32>, tensor<?xi32>, tensor<?x3x?xi8>) {
  %wp = gptq.permute %w by %p dims [1] : tensor<16x64xf32>, tensor<64xi64>
  %hp = gptq.permute %h by %p dims [0, 1] : tensor<64x64xf32>, tensor<64xi64>
  %w2 = gptq.permute %wp by %p inverse dims [1] : tensor<16x64xf32>, tensor<64xi64>
  %gp = gptq.permute %g by %pd dims [0] : tensor<?xi32>, tensor<?xi64>
  %cp = gptq.permute %c by %pd inverse dims [2, 0] : tensor<?x3x?xi8>, tensor<?xi64>
  return %w2, %hp, %gp, %cp : tensor<16x64xf32>, tensor<64x64xf32>, tensor<?xi32>, tensor<?x3x?xi8>
}
