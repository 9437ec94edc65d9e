func.func @bits_overflow() attributes {c = #gptq.config<bits = 99999999999999999999>} { return }
