func.func @bad_bool_case() attributes {c = #gptq.config<act_order = True>} { return }
