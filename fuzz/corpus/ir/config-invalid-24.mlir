func.func @missing_greater() attributes {c = #gptq.config<bits = 4 group_size = 8>} { return }
