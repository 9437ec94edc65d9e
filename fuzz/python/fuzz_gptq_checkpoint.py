"""Fuzzes the checkpoint folder readers (gptq_mlir.checkpoints.gptq's
read_gptq_checkpoint and gptq_mlir.importers.hf's read_checkpoint) with atheris.

An input is a folder's files joined by SEPARATOR: config.json, then
quantize_config.json, then model.safetensors (a part that is absent is a
file that is absent). Each input is written to a scratch folder and read
by both readers. Every input either reads or raises GPTQError; a checkpoint
that reads has weights of the shapes its config gives, finite, quantized
layers whose arrays agree with their shapes and bit width, and emits a
module. Anything else is a finding.

    .venv/bin/python fuzz/python/fuzz_gptq_checkpoint.py [libFuzzer options] [CORPUS...]

scripts/fuzz.sh runs it with the seeds of fuzz/python/corpus/gptq_checkpoint
(fuzz/python/make_seeds.py writes them).
"""

import os
import shutil
import sys
import tempfile
from pathlib import Path

import atheris

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

with atheris.instrument_imports(include=["gptq_mlir"]):
    from gptq_mlir.checkpoints import gptq
    from gptq_mlir.errors import GPTQError
    from gptq_mlir.importers import hf, emitter

import numpy as np

SEPARATOR = b"\n--gptq-fuzz-file--\n"
FILES = (hf.CONFIG_FILE, gptq.QUANTIZE_CONFIG_FILE, hf.SINGLE_FILE)


def _scratch() -> Path:
    """A folder for the files of each input, in memory where possible. libFuzzer
    ends the process with exit(), past Python's clean-up, so each run removes
    the folders of runs that have ended instead."""
    root = Path("/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir())
    for old in root.glob("gptq-fuzz-checkpoint-*"):
        pid = old.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(old, ignore_errors=True)
    folder = root / f"gptq-fuzz-checkpoint-{os.getpid()}"
    folder.mkdir(exist_ok=True)
    return folder


SCRATCH = _scratch()


def _write(data: bytes) -> None:
    parts = data.split(SEPARATOR, len(FILES) - 1)
    for index, name in enumerate(FILES):
        path = SCRATCH / name
        if index < len(parts):
            path.write_bytes(parts[index])
        elif path.exists():
            path.unlink()


def _check(checkpoint) -> None:
    cfg = checkpoint.config
    shapes = hf.weight_shapes(cfg)
    for name, array in checkpoint.weights.items():
        if array.dtype != np.float32 or not np.all(np.isfinite(array)):
            raise AssertionError(f"weight {name} accepted as {array.dtype}, finite: {np.all(np.isfinite(array))}")
        if name in shapes and array.shape != shapes[name]:
            raise AssertionError(f"weight {name} of shape {array.shape}, expected {shapes[name]}")
    for name, layer in checkpoint.quantized_weights().items():
        out, columns = shapes[name]
        groups = layer.scales.shape[1]
        if layer.qweight.shape != (out, -(-columns * layer.bits // 32)) or layer.g_idx.shape != (columns,):
            raise AssertionError(f"layer {name}: qweight {layer.qweight.shape}, g_idx {layer.g_idx.shape}")
        if layer.zeros.shape != (out, groups) or layer.g_idx.min() < 0 or layer.g_idx.max() >= groups:
            raise AssertionError(f"layer {name}: zeros {layer.zeros.shape}, g_idx outside [0, {groups})")
    emitter.module_text(checkpoint)


def test_one_input(data: bytes) -> None:
    _write(data)
    for read in (gptq.read_gptq_checkpoint, hf.read_checkpoint):
        try:
            checkpoint = read(SCRATCH)
        except GPTQError:
            continue
        _check(checkpoint)


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
