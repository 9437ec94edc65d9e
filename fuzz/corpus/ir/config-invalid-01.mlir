func.func @bits_high() attributes {c = #gptq.config<bits = 9>} { return }
