"""Importers: checkpoints and frameworks to linalg-on-tensors MLIR.

Readers of llama2.c checkpoints (:mod:`.llama2c`) and Hugging Face ones
(:mod:`.hf`, with the architectures of :mod:`.architectures`), the module
emitter they share (:mod:`.emitter`), and the torch-mlir path
(:mod:`.torch_import`).
"""
