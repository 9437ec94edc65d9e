func.func @duplicate_same_value() attributes {c = #gptq.config<sym = true, act_order = true, sym = true>} { return }
