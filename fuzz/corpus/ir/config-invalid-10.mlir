func.func @mse_norm_zero() attributes {c = #gptq.config<mse_norm = 0.0>} { return }
