func.func @mixed() attributes {
  m = #gptq.config<bits = 4, group_size = 128, sym = false, act_order = true, block_size = 128>
} {
  return
}
