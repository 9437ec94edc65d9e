func.func @mse_grid_zero() attributes {c = #gptq.config<mse_grid = 0>} { return }
