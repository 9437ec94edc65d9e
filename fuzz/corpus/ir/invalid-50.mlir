func.func @group_index_needs_perm(%n: index) {
  %g = gptq.group_index %n {config = #gptq.config<group_size = 8, act_order = true>} : tensor<?xi32>
  return
}
