func.func @group_size_zero() attributes {c = #gptq.config<group_size = 0>} { return }
