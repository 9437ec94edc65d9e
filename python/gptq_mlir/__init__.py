"""gptq-mlir's Python side: importers, tokenizer, data preparation and drivers.

The package prepares inputs for the project's tools and reads their outputs.
Models run through the project's compiled code (``libGPTQCAPI.so``, in this
process), never through a second implementation of the model in Python.

Install it into the README's ``.venv`` with ``.venv/bin/python -m pip
install --no-build-isolation --no-deps -e .`` (scripts/setup.sh does), which
gives the ``gptq-mlir`` command, the same as ``python -m gptq_mlir``; or
import it from the checkout with ``PYTHONPATH=python``.

The native library and tools come from the CMake build folder:
``$GPTQ_MLIR_BUILD_DIR``, else ``build/`` of the checkout the package is
imported from; ``$GPTQ_CAPI_LIB``, ``$GPTQ_RUN`` and ``$GPTQ_OPT`` name one
file each (:mod:`gptq_mlir.runtime.paths`, docs/python.md).
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
