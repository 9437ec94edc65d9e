"""Running the project's compiled code: the built files (:mod:`.paths`), the
C API in process (:mod:`.native`), calls and ``gptq-opt`` (:mod:`.runner`)
and the language-model drivers over them (:mod:`.model`).
"""
