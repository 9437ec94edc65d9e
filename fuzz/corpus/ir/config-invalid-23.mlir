func.func @trailing_comma() attributes {c = #gptq.config<bits = 4,>} { return }
