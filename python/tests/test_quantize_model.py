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
from gptq_mlir.checkpoints import gptq
from gptq_mlir.cli.commands import main
from gptq_mlir.runtime import runner

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


def test_layer_errors_are_the_output_errors(tmp_path, gptq_opt):
    """The report's per-layer ``error`` and ``rtn_error`` are
    tr((W - Q) H (W - Q)^T) / 2 of the layer's float weight W, its quantized
    weight Q (GPTQ's, and round to nearest's on the same grids) and the
    Hessian the pass used, as numpy computes them in float64."""
    ckpt = synthetic_checkpoint(seed=3, n_layers=2, dim=64, hidden_dim=160, n_heads=4, n_kv_heads=2,
                                vocab_size=50, seq_len=16)
    source = write_checkpoint(tmp_path / "model.bin", ckpt, 1)
    model = tmp_path / "model.mlir"
    assert main(["import-llama2c", str(source), "-o", str(model)]) == 0
    calib = tmp_path / "calib.npy"
    np.save(calib, np.random.default_rng(1).integers(0, 50, size=(6, 16), dtype=np.int32))
    hessians = tmp_path / "h.npz"
    # group-size=16 makes round to nearest's grids those of GPTQ without
    # act-order (per group, from the float weights).
    report = quantize(gptq_opt, model, tmp_path / "q.mlir",
                      f"calibration={calib} calibration-batch=4 bits=3 group-size=16 dump-hessians={hessians}")
    layers = gptq.read_rewritten_model(tmp_path / "q.mlir").layers
    saved = np.load(hessians)
    assert len(report["layers"]) == 14
    for entry in report["layers"]:
        name = entry["name"]
        w = ckpt.weights[name].astype(np.float64)
        h = saved[name].astype(np.float64)
        layer = layers[name]
        q = layer.scales[:, layer.g_idx] * (layer.codes.astype(np.float32) - layer.zeros[:, layer.g_idx])
        # Round to nearest in float32, as the pass computes it.
        maxq = np.float32(7)
        groups = ckpt.weights[name].reshape(w.shape[0], -1, 16)
        lo = np.minimum(groups.min(axis=2, keepdims=True), np.float32(0))
        hi = np.maximum(groups.max(axis=2, keepdims=True), np.float32(0))
        scale = (hi - lo) / maxq
        zero = np.round(-lo / scale)
        rtn = (scale * (np.clip(np.round(groups / scale) + zero, 0, maxq) - zero)).reshape(w.shape)
        for key, quantized in (("error", q), ("rtn_error", rtn)):
            d = w - quantized.astype(np.float64)
            expected = np.einsum("ij,jk,ik->", d, h, d) / 2
            assert entry[key] == pytest.approx(expected, rel=1e-4), (name, key)
