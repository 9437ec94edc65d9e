func.func @every_key() attributes {
  k00 = #gptq.config<bits = 2>,
  k01 = #gptq.config<bits = 8>,
  k02 = #gptq.config<group_size = 128>,
  k03 = #gptq.config<group_size = 1>,
  k04 = #gptq.config<sym = true>,
  k05 = #gptq.config<act_order = true>,
  k06 = #gptq.config<group_size = 32, static_groups = true>,
  k07 = #gptq.config<percdamp = 0.1>,
  k08 = #gptq.config<block_size = 1>,
// -----#gptq.config<mse = true>,
  k10 = #gptq.config<mse_norm = 3.0>,
  k11 = #gptq.config<mse_grid = 1>,
  k12 = #gptq.config<mse_max_shrink = 1.0>,
  k1gptq.mask_dead_inputs3 = #gptq.config<percdamp = 5.000000e-01>
} {
  return
}
