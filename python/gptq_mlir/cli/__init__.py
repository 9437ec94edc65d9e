"""The command line: ``python -m gptq_mlir`` and ``gptq-mlir``.

This package imports nothing: :mod:`.console` installs the signal handlers
before the commands (:mod:`.commands`, :mod:`.sweep`) and NumPy are imported.
"""
