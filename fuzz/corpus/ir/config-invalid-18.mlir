func.func @bad_bool() attributes {c = #gptq.config<sym = yes>} { return }
