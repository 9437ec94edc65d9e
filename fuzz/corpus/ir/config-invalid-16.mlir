func.func @duplicate_key() attributes {c = #gptq.config<bits = 4, bits = 5>} { return }
