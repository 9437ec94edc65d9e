func.func @group_index_perm_length(%n: index, %p: tensor<16xi64>) {
  %g = gptq.group_index %n perm(%p : tensor<16xi64>) {config = #gptq.config<group_size = 8, act_order = true>} : tensor<32xi32>
  return
}
