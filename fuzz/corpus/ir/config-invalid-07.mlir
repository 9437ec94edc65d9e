func.func @percdamp_negative() attributes {c = #gptq.config<percdamp = -0.5>} { return }
