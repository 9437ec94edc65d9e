"""Run the project's compiler: MLIR functions in-process, passes through
``gptq-opt``.

:func:`run_function` and :func:`describe` call the JIT in this process
through ``libGPTQCAPI.so`` (see :mod:`gptq_mlir.runtime.native`): an entry is
compiled once and called on NumPy arrays, with no files in between.
``gptq-run`` does the same from the command line, on ``.npy`` files.

``gptq-opt`` runs passes on a module and writes the result (``-o FILE``);
this module is the only place that starts it.

The binaries are found as :mod:`gptq_mlir.runtime.paths` says
(``$GPTQ_MLIR_BUILD_DIR/bin``, the checkout's ``build/bin``, or ``$GPTQ_RUN``
and ``$GPTQ_OPT``).
"""

import os
import subprocess
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import numpy as np

from . import native, paths
from ..errors import GPTQError
from .native import error_line


def _find_tool(name: str) -> Optional[Path]:
    candidate = paths.tool(name)
    return candidate if candidate.is_file() and os.access(candidate, os.X_OK) else None


def _require_tool(name: str) -> Path:
    tool = _find_tool(name)
    if tool is None:
        raise GPTQError(paths.missing(name, paths.tool(name), name))
    return tool


def find_runner() -> Optional[Path]:
    """The gptq-run binary, or None when it has not been built."""
    return _find_tool("gptq-run")


def require_runner() -> Path:
    """The gptq-run binary; raise GPTQError saying how to get one if missing."""
    return _require_tool("gptq-run")


def find_opt() -> Optional[Path]:
    """The gptq-opt binary, or None when it has not been built."""
    return _find_tool("gptq-opt")


def require_opt() -> Path:
    """The gptq-opt binary; raise GPTQError saying how to get one if missing."""
    return _require_tool("gptq-opt")


def run_opt(
    module: Union[str, os.PathLike],
    output: Union[str, os.PathLike],
    pass_args: Sequence[str],
    on_line: Optional[Callable[[str], None]] = None,
) -> None:
    """Run ``gptq-opt MODULE PASS_ARGS... -o OUTPUT``.

    Each line gptq-opt prints on stderr (its progress) goes to ``on_line``
    as it comes, until an error line. Raises GPTQError if gptq-opt fails,
    with its error line (the last line that says ``error:``, else its last
    line), so that the failure stays one line.
    """
    opt = require_opt()
    command = [str(opt), str(module), *pass_args, "-o", str(output)]
    try:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True, errors="replace",
        )
    except OSError as error:
        raise GPTQError(f"cannot start {opt}: {error.strerror or error}") from error
    lines: List[str] = []
    failing = False
    try:
        assert process.stderr is not None
        for line in process.stderr:
            line = line.rstrip("\n")
            lines.append(line)
            # What follows an error line (the source line and a caret) is
            # part of it.
            failing = failing or "error:" in line
            if on_line is not None and not failing:
                on_line(line)
        status = process.wait()
    except BaseException:
        # Interrupted: gptq-opt removes its own temporary files when it is
        # ended by a signal.
        process.terminate()
        process.wait()
        raise
    if status != 0:
        message = error_line("\n".join(lines))
        raise GPTQError(f"gptq-opt failed (exit status {status}): {message}")


def describe(module: Union[str, os.PathLike], entry: Optional[str] = None) -> Dict[str, Any]:
    """What the MLIR module at ``module`` offers, without compiling it.

    Returns ``{"model": {...} or None, "functions": [...]}``: ``model`` is the
    module's ``gptq.model`` attribute (``{"dim": 64, ..., "vocab_size": 512}``,
    verified by the dialect), and each function is ``{"name", "inputs",
    "results"}`` with every argument and result as ``{"kind": "tensor" |
    "memref" | "scalar", "dtype": "int32", "shape": [None, None]}`` (``None``
    for a dynamic size), or ``{"name", "error"}`` when it cannot be called.
    With ``entry``, only that function, and GPTQError when it cannot be
    called. Parsed in-process (:mod:`gptq_mlir.runtime.native`, as ``gptq-run
    --describe`` does); raises GPTQError with the parser's or verifier's
    message if the module does not parse or verify.
    """
    return native.open_module(module).describe(entry)


def run_function(
    module: Union[str, os.PathLike],
    inputs: Sequence[np.ndarray],
    entry: str = "forward",
) -> List[np.ndarray]:
    """Call ``entry`` of the MLIR module at ``module`` on ``inputs``.

    In-process (:mod:`gptq_mlir.runtime.native`): the entry is compiled on the first
    call in the process and reused while the module's file stays the same.
    Returns the function's results as arrays. Raises GPTQError with the
    compiler's or the code's own message if it fails.
    """
    results = native.open_module(module).call(entry, inputs)
    if not results:
        raise GPTQError(f"@{entry} of {module} returned no results")
    return results
