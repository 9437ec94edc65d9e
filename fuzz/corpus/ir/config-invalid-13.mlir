func.func @mse_max_shrink_zero() attributes {c = #gptq.config<mse_max_shrink = 0.0>} { return }
