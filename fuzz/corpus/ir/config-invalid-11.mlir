func.func @mse_norm_negative() attributes {c = #gptq.config<mse_norm = -2.4>} { return }
