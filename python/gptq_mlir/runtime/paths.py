"""Where the package finds the project's built native code.

Everything the package runs or loads from the CMake build (``libGPTQCAPI.so``
and the tools ``gptq-run`` and ``gptq-opt``) is found here, in one way:

- ``$GPTQ_MLIR_BUILD_DIR``, the CMake build folder, holding ``lib/`` and
  ``bin/``; when unset, ``build/`` of the checkout the package is imported
  from (``python/gptq_mlir`` in a clone, as ``PYTHONPATH=python`` and
  ``pip install -e .`` use it);
- one file of it may be named on its own: ``$GPTQ_CAPI_LIB`` (the library),
  ``$GPTQ_RUN`` and ``$GPTQ_OPT`` (the tools), e.g. to compare two builds.
"""

import os
from pathlib import Path
from typing import Optional

#: The environment variable that names the CMake build folder.
BUILD_DIR_VAR = "GPTQ_MLIR_BUILD_DIR"

#: The checkout the package is imported from (python/gptq_mlir/runtime/paths.py).
SOURCE_ROOT = Path(__file__).resolve().parents[3]

#: The environment variables that name one built file each, by file.
OVERRIDES = {"libGPTQCAPI.so": "GPTQ_CAPI_LIB", "gptq-run": "GPTQ_RUN", "gptq-opt": "GPTQ_OPT"}


def build_dir() -> Path:
    """The CMake build folder: ``$GPTQ_MLIR_BUILD_DIR``, else the checkout's ``build/``."""
    configured = os.environ.get(BUILD_DIR_VAR)
    return Path(configured) if configured else SOURCE_ROOT / "build"


def _built(name: str, folder: str) -> Path:
    configured = os.environ.get(OVERRIDES.get(name, ""))
    return Path(configured) if configured else build_dir() / folder / name


def library(name: str) -> Path:
    """The shared library ``name`` (``lib/`` of the build, or its own variable)."""
    return _built(name, "lib")


def tool(name: str) -> Path:
    """The tool ``name`` (``bin/`` of the build, or its own variable)."""
    return _built(name, "bin")


def where(name: str, path: Path) -> str:
    """How an error names the place ``name`` was looked for: the variable
    that chose it and its value."""
    variable: Optional[str] = OVERRIDES.get(name)
    if variable and os.environ.get(variable):
        return f"${variable}={path}"
    if os.environ.get(BUILD_DIR_VAR):
        return f"{path} (${BUILD_DIR_VAR}={os.environ[BUILD_DIR_VAR]})"
    return str(path)


def missing(name: str, path: Path, target: str) -> str:
    """The message for a built file that is not there: where it was looked
    for and how to get it."""
    variable = OVERRIDES.get(name)
    if variable and os.environ.get(variable):
        fix = f"point ${variable} at it"
    else:
        fix = f"set ${BUILD_DIR_VAR} to the build folder"
    return f"{name} not found at {where(name, path)}: build it first (cmake --build build --target {target}) or {fix}"
