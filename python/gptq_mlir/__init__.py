"""gptq-mlir's Python side: importers, tokenizer, data preparation and drivers.

The package prepares inputs for the project's tools and reads their outputs.
Models run through the project's own runner (``build/bin/gptq-run``), never
through a second implementation of the model in Python.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
