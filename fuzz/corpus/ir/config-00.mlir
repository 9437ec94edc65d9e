func.func @defaults() attributes {
  c0 = #gptq.config<>,
  c1 = #gptq.config<bits = 4, group_size = -1, sym = false, act_order = false, static_groups = false, percdamp = 0.01, block_size = 128, mse = false, mse_norm = 2.4, mse_grid = 100, mse_max_shrink = 0.8>,
  c2 = #gptq.config<mse_max_shrink = 0.8, bits = 4>,
  c3 = #gptq.config<percdamp = 1.000000e-02>
} {
  return
}
