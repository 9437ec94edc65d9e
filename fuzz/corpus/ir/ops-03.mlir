func.func @act_order(%h: tensor<64x64xf32>, %d: tensor<?x?xf32>) -> (tensor<64xi64>, tensor<?xi64>, tensor<8xi64>) {
  %p = gptq.act_order %h : tensor<64x64xf32> -> tensor<64xi64>
  %pd = gptq.act_order %d : tensor<?x?xf32> -> tensor<?xi64>
  %ps = gptq.act_order %d : tensor<?x?xf32> -> tensor<8xi64>
  return %p, %pd, %ps : tensor<64xi64>, tensor<?xi64>, tensor<8xi64>
}
