func.func @percdamp_one() attributes {c = #gptq.config<percdamp = 1.0>} { return }
