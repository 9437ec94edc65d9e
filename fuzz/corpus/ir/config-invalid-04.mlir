func.func @static_groups_per_row() attributes {c = #gptq.config<static_groups = true>} { return }
