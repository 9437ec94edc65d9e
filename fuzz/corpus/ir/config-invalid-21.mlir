func.func @fractional_bits() attributes {c = #gptq.config<bits = 4.5>} { return }
