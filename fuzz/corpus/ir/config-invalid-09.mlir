func.func @block_size_zero() attributes {c = #gptq.config<block_size = 0>} { return }
