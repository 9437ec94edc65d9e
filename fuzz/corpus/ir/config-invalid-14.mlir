func.func @mse_max_shrink_high() attributes {c = #gptq.config<mse_max_shrink = 1.5>} { return }
