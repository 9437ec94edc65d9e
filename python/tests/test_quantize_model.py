"""gptq-opt --gptq-quantize-model on llama2.c checkpoints of other shapes.

The pass must need no change for other depths and head layouts: multi-head,
grouped-query and multi-query attention, one to three blocks, tied and
untied classifiers, both checkpoint formats. For each, the quantized model
runs, its logits equal those of the same model with the dequantized weights
written back as float (to 1e-5 relative), and they differ from the float
model's by a quantization-sized amount.
"""

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import synthetic_checkpoint, write_checkpoint
from gptq_mlir import runner
from gptq_mlir.cli import main

# (checkpoint shape, format version, whether to compare with format=float)
CASES = [
    (dict(n_layers=3, n_heads=4, n_kv_heads=4, shared_classifier=False), 0, True),
    (dict(n_layers=1, dim=32, hidden_dim=88, n_heads=8, n_kv_heads=1), 1, False),
    (dict(n_layers=2, dim=24, hidden_dim=64, n_heads=6, n_kv_heads=2, seq_len=20), 1, False),
]


def quantize(gptq_opt: Path, model: Path, output: Path, options: str) -> dict:
    report = output.with_suffix(".json")
    completed = subprocess.run(
        [str(gptq_opt), str(model), f"--gptq-quantize-model={options} report={report}", "-o", str(output)],
        capture_output=True, text=True, check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(report.read_text())


@pytest.mark.parametrize("shape,version,compare", CASES, ids=["mha-untied-v0", "mqa-v1", "gqa-v1"])
def test_other_checkpoints_quantize(tmp_path, gptq_run, gptq_opt, shape, version, compare):
    ckpt = synthetic_checkpoint(seed=version, **shape)
    cfg = ckpt.config
    source = write_checkpoint(tmp_path / "model.bin", ckpt, version)
    model = tmp_path / "model.mlir"
    assert main(["import-llama2c", str(source), "-o", str(model)]) == 0

    rng = np.random.default_rng(1)
    calib = tmp_path / "calib.npy"
    np.save(calib, rng.integers(0, cfg.vocab_size, size=(6, cfg.seq_len), dtype=np.int32))
    tokens = rng.integers(0, cfg.vocab_size, size=(2, cfg.seq_len), dtype=np.int32)

    options = f"calibration={calib} calibration-batch=4 bits=4 group-size=8 act-order=true"
    report = quantize(gptq_opt, model, tmp_path / "packed.mlir", options)

    # Seven layers per block; the classifier stays float, as in the reference.
    names = [layer["name"] for layer in report["layers"]]
    assert len(names) == 7 * cfg.n_layers
    assert names[-1] == f"layers.{cfg.n_layers - 1}.feed_forward.w2"
    assert all(layer["method"] == "gptq" and layer["samples"] == 6 for layer in report["layers"])
    assert all(layer["error"] <= layer["rtn_error"] * 1.0001 for layer in report["layers"])

    (reference,) = runner.run_function(model, [tokens])
    (packed,) = runner.run_function(tmp_path / "packed.mlir", [tokens])
    assert np.isfinite(packed).all()
    assert np.abs(packed - reference).max() > 1e-4 * np.abs(reference).max()
    if compare:
        quantize(gptq_opt, model, tmp_path / "float.mlir", options + " format=float")
        (dequantized,) = runner.run_function(tmp_path / "float.mlir", [tokens])
        assert np.abs(packed - dequantized).max() <= 1e-5 * np.abs(dequantized).max()
