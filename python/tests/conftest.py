"""Shared fixtures: the real stories260K data, synthetic checkpoints, tools.

The stories260K files are part of the repository (data/stories260K); a
missing one is a broken checkout, so the fixtures fail rather than skip.
"""

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS.parent))
sys.path.insert(0, str(TESTS))

from gptq_mlir.importers import llama2c  # noqa: E402
from gptq_mlir.runtime import paths, runner

REPO_ROOT = TESTS.parents[1]
DATA = REPO_ROOT / "data" / "stories260K"
MLIR_OPT_DEFAULT = "/usr/lib/llvm-22/bin/mlir-opt"


def _require(path: Path) -> Path:
    if not path.is_file():
        pytest.fail(f"{path} is missing: the repository's data/stories260K is incomplete")
    return path


@pytest.fixture(scope="session")
def checkpoint_path() -> Path:
    """The real stories260K checkpoint (legacy format)."""
    return _require(DATA / "stories260K.bin")


@pytest.fixture(scope="session")
def tokenizer_path() -> Path:
    """Its 512-token vocabulary."""
    return _require(DATA / "tok512.bin")


@pytest.fixture(scope="session")
def text_path() -> Path:
    """TinyStories text, paragraphs separated by blank lines."""
    return _require(DATA / "tinystories_val_part1.txt")


@pytest.fixture(scope="session")
def gptq_opt() -> Path:
    """The gptq-opt binary; tests that need it skip when it is not built."""
    path = runner.find_opt()
    if path is None:
        pytest.skip(f"gptq-opt is not built (looked at {paths.where('gptq-opt', paths.tool('gptq-opt'))})")
    return path


def load_bench_module(name: str):
    """The script bench/NAME.py as a module (the benchmarks are not a package)."""
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def gptq_run() -> Path:
    """The gptq-run binary; tests that need it (or the in-process JIT of
    libGPTQCAPI.so, built with it) skip when it is not built."""
    from gptq_mlir.runtime import native

    path = runner.find_runner()
    if path is None:
        pytest.skip(f"gptq-run is not built (looked at {paths.where('gptq-run', paths.tool('gptq-run'))})")
    if not native.available():
        pytest.skip(f"libGPTQCAPI.so is not built (looked at {native.library_path()})")
    return path


@pytest.fixture(scope="session")
def mlir_opt() -> str:
    """LLVM 22's mlir-opt, to parse and verify emitted modules."""
    path = os.environ.get("MLIR_OPT") or shutil.which("mlir-opt") or MLIR_OPT_DEFAULT
    if not Path(path).is_file():
        pytest.skip("mlir-opt (LLVM 22) not found; set MLIR_OPT")
    return path


@pytest.fixture(scope="session")
def stories_mlir(tmp_path_factory, checkpoint_path) -> Path:
    """stories260K imported once for the whole session."""
    from gptq_mlir.importers import emitter

    path = tmp_path_factory.mktemp("stories") / "stories260K.mlir"
    emitter.write_module(llama2c.read_checkpoint(checkpoint_path), path)
    return path


def synthetic_checkpoint(
    seed: int = 0,
    dim: int = 16,
    hidden_dim: int = 40,
    n_layers: int = 2,
    n_heads: int = 4,
    n_kv_heads: int = 2,
    vocab_size: int = 37,
    seq_len: int = 12,
    shared_classifier: bool = True,
) -> llama2c.Llama2cCheckpoint:
    """A tiny random model; weights scaled so that logits are well spread."""
    cfg = llama2c.Llama2cConfig(
        dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len, shared_classifier
    )
    rng = np.random.default_rng(seed)
    weights = {}
    for name, shape in llama2c.weight_layout(cfg, 0):
        if name.startswith("freq_cis"):
            continue
        if len(shape) == 1:
            weights[name] = (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
        else:
            weights[name] = (rng.standard_normal(shape) / np.sqrt(shape[1])).astype(np.float32)
    weights["freq_cis_real"], weights["freq_cis_imag"] = llama2c.rope_tables(cfg.head_size, seq_len)
    return llama2c.Llama2cCheckpoint(cfg, weights, 0)


def write_checkpoint(path: Path, checkpoint: llama2c.Llama2cCheckpoint, version: int) -> Path:
    """Serialize ``checkpoint`` to ``path`` in the given format version."""
    path.write_bytes(llama2c.serialize_checkpoint(checkpoint.config, checkpoint.weights, version))
    return path


def assert_one_line_error(result: subprocess.CompletedProcess, *fragments: str) -> str:
    """Checks that a command failed with exit status 1 and one line on
    stderr, ``gptq_mlir: error: ...``, holding every fragment; returns it."""
    assert result.returncode == 1, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("gptq_mlir: error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]
