func.func @group_index(%n: index, %p: tensor<?xi64>, %ps: tensor<64xi64>) -> (tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<64xi32>, tensor<64xi32>) {
  %g0 = gptq.group_index %n {config = #gptq.config<>} : tensor<?xi32>
  %g1 = gptq.group_index %n perm(%p : tensor<?xi64>) {config = #gptq.config<group_size = 128, act_order = true>} : tensor<?xi32>
  %g2 = gptq.group_index %n {config = #gptq.config<group_size = 16, act_order = true, static_groups = true>} : tensor<?xi32>
  %c64 = arith.constant 64 : index
  %g3 = gptq.group_index %c64 perm(%ps : tensor<64xi64>) {config = #gptq.config<group_size = 8, act_order = true>} : tensor<64xi32>
  %g4 = gptq.group_index %c64 {config = #gptq.config<group_size = 8>} : tensor<64xi32>
  return %g0, %g1, %g2, %g3, %g4 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<64xi32>, tensor<64xi32>
}
