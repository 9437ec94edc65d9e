func.func @percdamp_zero() attributes {c = #gptq.config<percdamp = 0.0>} { return }
