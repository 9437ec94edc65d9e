func.func @unknown_key() attributes {c = #gptq.config<bitz = 4>} { return }
