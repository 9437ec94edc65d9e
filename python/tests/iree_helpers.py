"""IREE as the tests run it: the upstream-only form of a module
(gptq-to-upstream-pipeline), compiled for the CPU (llvm-cpu, local-task)
with the command line docs/pipelines.md gives, and loaded for calls.
Skips, saying why, without the IREE packages (scripts/test-deps.sh)."""

import subprocess
from pathlib import Path

import numpy as np
import pytest

#: The command line docs/pipelines.md gives.
IREE_FLAGS = [
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=host",
]


def relative(ours: np.ndarray, theirs: np.ndarray) -> float:
    """The largest difference over the largest of ``ours``."""
    return float(np.abs(ours - theirs).max() / np.abs(ours).max())


def upstream_form(gptq_opt: Path, module: Path, out: Path, *options: str) -> Path:
    """``module`` through gptq-to-upstream-pipeline into ``out``, which
    must hold no op, type or attribute of ours."""
    result = subprocess.run(
        [str(gptq_opt), str(module), "--gptq-to-upstream-pipeline", *options, "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "gptq" not in out.read_text(), "an op, type or attribute of ours is left"
    return out


def iree_context(module: Path):
    """IREE's runtime context with ``module`` compiled and loaded; its
    functions are those of ``context.modules[<the module's name>]``."""
    ireec = pytest.importorskip("iree.compiler", reason="iree-base-compiler is not installed (scripts/test-deps.sh)")
    ireert = pytest.importorskip("iree.runtime", reason="iree-base-runtime is not installed (scripts/test-deps.sh)")
    vmfb = ireec.compile_file(str(module), extra_args=IREE_FLAGS)
    context = ireert.SystemContext(config=ireert.Config("local-task"))
    context.add_vm_module(ireert.VmModule.copy_buffer(context.instance, vmfb))
    return context
