func.func @percdamp_nan() attributes {c = #gptq.config<percdamp = 0x7FF8000000000000>} { return }
