func.func @bits_low() attributes {c = #gptq.config<bits = 1>} { return }
