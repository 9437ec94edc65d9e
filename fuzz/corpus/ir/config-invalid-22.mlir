func.func @missing_equal() attributes {c = #gptq.config<bits 4>} { return }
