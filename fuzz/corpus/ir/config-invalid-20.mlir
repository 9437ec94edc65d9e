func.func @bool_as_integer() attributes {c = #gptq.config<mse = 1>} { return }
