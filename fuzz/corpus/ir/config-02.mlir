func.func @all_keys() attributes {
  all = #gptq.config<mse_max_shrink = 0.5, mse_grid = 50, mse_norm = 2.0, mse = true, block_size = 32, percdamp = 0.025, static_groups = true, act_order = true, sym = true, group_size = 64, bits = 3>
} {
  return
}
