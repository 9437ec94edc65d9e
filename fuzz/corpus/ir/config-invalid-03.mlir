func.func @group_size_negative() attributes {c = #gptq.config<group_size = -2>} { return }
