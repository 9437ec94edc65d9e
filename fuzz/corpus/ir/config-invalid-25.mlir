func.func @missing_less() attributes {c = #gptq.config} { return }
