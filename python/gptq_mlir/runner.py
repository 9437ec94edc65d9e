"""Run the project's tools: MLIR functions through ``gptq-run``, passes
through ``gptq-opt``.

This module is the only place that starts them. ``gptq-run`` JIT-compiles
a module through the CPU pipeline and calls one function on ``.npy`` inputs::

    gptq-run MODEL.mlir --entry forward --input tokens.npy --output-dir DIR

writing the results, in order, to ``DIR/0.npy``, ``DIR/1.npy``, ...
``gptq-run MODEL.mlir --describe`` parses the module without compiling it and
prints its entry functions' signatures and its ``gptq.model`` attribute as
JSON (see :func:`describe`).

``gptq-opt`` runs passes on a module and writes the result (``-o FILE``).

The binaries are ``$GPTQ_RUN`` and ``$GPTQ_OPT`` if set, else
``build/bin/gptq-run`` and ``build/bin/gptq-opt`` under the repository root.
"""

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import numpy as np

from .errors import GPTQError

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_RUNNER = REPO_ROOT / "build" / "bin" / "gptq-run"
ENV_VAR = "GPTQ_RUN"
DEFAULT_OPT = REPO_ROOT / "build" / "bin" / "gptq-opt"
OPT_ENV_VAR = "GPTQ_OPT"


def _find_tool(env_var: str, default: Path) -> Optional[Path]:
    configured = os.environ.get(env_var)
    candidate = Path(configured) if configured else default
    return candidate if candidate.is_file() and os.access(candidate, os.X_OK) else None


def _require_tool(name: str, env_var: str, default: Path) -> Path:
    tool = _find_tool(env_var, default)
    if tool is None:
        configured = os.environ.get(env_var)
        where = f"${env_var}={configured}" if configured else str(default)
        raise GPTQError(
            f"{name} not found at {where}: build it first (cmake --build build "
            f"--target {name}) or point ${env_var} at the binary"
        )
    return tool


def find_runner() -> Optional[Path]:
    """The gptq-run binary, or None when it has not been built."""
    return _find_tool(ENV_VAR, DEFAULT_RUNNER)


def require_runner() -> Path:
    """The gptq-run binary; raise GPTQError saying how to get one if missing."""
    return _require_tool("gptq-run", ENV_VAR, DEFAULT_RUNNER)


def find_opt() -> Optional[Path]:
    """The gptq-opt binary, or None when it has not been built."""
    return _find_tool(OPT_ENV_VAR, DEFAULT_OPT)


def require_opt() -> Path:
    """The gptq-opt binary; raise GPTQError saying how to get one if missing."""
    return _require_tool("gptq-opt", OPT_ENV_VAR, DEFAULT_OPT)


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
        raise GPTQError(f"gptq-opt failed (exit status {status}): {_error_line(lines)}")


def _error_line(lines: Sequence[str]) -> str:
    """The line of a tool's stderr that says what failed, so that a failure
    stays one line: the first that says ``error:`` (the cause; what follows
    it, the source line and a caret, notes, the tool's own summary such as
    ``cannot parse``, adds nothing), else the last one."""
    lines = [line.strip() for line in lines if line.strip()]
    errors = [line for line in lines if "error:" in line]
    return errors[0] if errors else (lines or ["no message"])[-1]


def _run_tool(command: List[str]) -> subprocess.CompletedProcess:
    """Run ``command``; its output decoded as UTF-8 with undecodable bytes
    replaced (a module's bad bytes come back quoted in its diagnostics)."""
    try:
        return subprocess.run(command, capture_output=True, text=True, errors="replace", check=False)
    except OSError as error:
        raise GPTQError(f"cannot start {command[0]}: {error.strerror or error}") from error


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
    completed = _run_tool(command)
    if completed.returncode != 0:
        message = _error_line((completed.stderr or completed.stdout).splitlines())
        raise GPTQError(f"gptq-run --describe failed (exit status {completed.returncode}) on {module}: {message}")
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
        completed = _run_tool(command)
        if completed.returncode != 0:
            message = _error_line((completed.stderr or completed.stdout).splitlines())
            raise GPTQError(f"gptq-run failed (exit status {completed.returncode}) on {module}: {message}")
        results = []
        while (output_dir / f"{len(results)}.npy").exists():
            results.append(np.load(output_dir / f"{len(results)}.npy", allow_pickle=False))
        if not results:
            raise GPTQError(f"gptq-run wrote no results for @{entry} of {module}")
        return results
