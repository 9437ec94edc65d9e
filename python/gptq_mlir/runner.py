"""Run MLIR functions through the project's runner, ``gptq-run``.

This module is the only place that starts the runner. ``gptq-run`` JIT-compiles
a module through the CPU pipeline and calls one function on ``.npy`` inputs::

    gptq-run MODEL.mlir --entry forward --input tokens.npy --output-dir DIR

writing the results, in order, to ``DIR/0.npy``, ``DIR/1.npy``, ...
``gptq-run MODEL.mlir --describe`` parses the module without compiling it and
prints its entry functions' signatures and its ``gptq.model`` attribute as
JSON (see :func:`describe`).

The binary is ``$GPTQ_RUN`` if set, else ``build/bin/gptq-run`` under the
repository root.
"""

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from .errors import GPTQError

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_RUNNER = REPO_ROOT / "build" / "bin" / "gptq-run"
ENV_VAR = "GPTQ_RUN"


def find_runner() -> Optional[Path]:
    """The gptq-run binary, or None when it has not been built."""
    configured = os.environ.get(ENV_VAR)
    candidate = Path(configured) if configured else DEFAULT_RUNNER
    return candidate if candidate.is_file() and os.access(candidate, os.X_OK) else None


def require_runner() -> Path:
    """The gptq-run binary; raise GPTQError saying how to get one if missing."""
    runner = find_runner()
    if runner is None:
        configured = os.environ.get(ENV_VAR)
        where = f"${ENV_VAR}={configured}" if configured else str(DEFAULT_RUNNER)
        raise GPTQError(
            f"gptq-run not found at {where}: build it first (cmake --build build "
            f"--target gptq-run) or point ${ENV_VAR} at the binary"
        )
    return runner


def describe(module: Union[str, os.PathLike], entry: Optional[str] = None) -> Dict[str, Any]:
    """What gptq-run reads from the MLIR module at ``module``, without compiling it.

    Returns ``{"model": {...} or None, "functions": [...]}``: ``model`` is the
    module's ``gptq.model`` attribute (``{"dim": 64, ..., "vocab_size": 512}``,
    verified by the dialect), and each function is ``{"name", "inputs",
    "results"}`` with every argument and result as ``{"kind": "tensor" |
    "memref" | "scalar", "dtype": "int32", "shape": [None, None]}`` (``None``
    for a dynamic size), or ``{"name", "error"}`` when gptq-run could not call
    it. With ``entry``, only that function, and GPTQError when it cannot be
    called. Raises GPTQError with the runner's own message if the module does
    not parse or verify.
    """
    runner = require_runner()
    command = [str(runner), str(module), "--describe"]
    if entry is not None:
        command += ["--entry", entry]
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        message = (completed.stderr or completed.stdout).strip()
        raise GPTQError(
            f"gptq-run --describe failed (exit status {completed.returncode}) on {module}:\n{message}"
        )
    try:
        description = json.loads(completed.stdout)
    except ValueError as error:
        raise GPTQError(f"gptq-run --describe printed no valid JSON for {module}: {error}") from error
    if not isinstance(description, dict) or not isinstance(description.get("functions"), list):
        raise GPTQError(f"gptq-run --describe printed an unexpected object for {module}")
    return description


def run_function(
    module: Union[str, os.PathLike],
    inputs: Sequence[np.ndarray],
    entry: str = "forward",
    extra_args: Sequence[str] = (),
) -> List[np.ndarray]:
    """Call ``entry`` of the MLIR module at ``module`` on ``inputs``.

    Returns the function's results as arrays. Raises GPTQError with the
    runner's own message if it fails.
    """
    runner = require_runner()
    with tempfile.TemporaryDirectory(prefix="gptq-run-") as scratch:
        scratch_dir = Path(scratch)
        command = [str(runner), str(module), "--entry", entry]
        for index, array in enumerate(inputs):
            path = scratch_dir / f"input{index}.npy"
            np.save(path, np.ascontiguousarray(array), allow_pickle=False)
            command += ["--input", str(path)]
        output_dir = scratch_dir / "out"
        output_dir.mkdir()
        command += ["--output-dir", str(output_dir), *extra_args]
        completed = subprocess.run(command, capture_output=True, text=True, check=False)
        if completed.returncode != 0:
            message = (completed.stderr or completed.stdout).strip()
            raise GPTQError(
                f"gptq-run failed (exit status {completed.returncode}) on {module}:\n{message}"
            )
        results = []
        while (output_dir / f"{len(results)}.npy").exists():
            results.append(np.load(output_dir / f"{len(results)}.npy", allow_pickle=False))
        if not results:
            raise GPTQError(f"gptq-run wrote no results for @{entry} of {module}")
        return results
