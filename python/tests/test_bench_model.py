"""The model benchmark's pieces: bench/make_checkpoint.py and a tiny run of
bench/bench_model.py's forward part (figures are not checked, only that the
run completes, reports every field and computes what PyTorch computes)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO_ROOT
from gptq_mlir.importers import llama2c

MAKE = REPO_ROOT / "bench" / "make_checkpoint.py"
BENCH = REPO_ROOT / "bench" / "bench_model.py"
TINY = ["--dim", "32", "--hidden-dim", "64", "--n-layers", "2", "--n-heads", "4",
        "--n-kv-heads", "2", "--vocab-size", "64", "--seq-len", "24"]


def make(path, *extra):
    return subprocess.run([sys.executable, str(MAKE), *TINY, *extra, "-o", str(path)],
                          capture_output=True, text=True, check=False)


def test_make_checkpoint_shape_and_seed(tmp_path):
    first, again, other = tmp_path / "a.bin", tmp_path / "b.bin", tmp_path / "c.bin"
    for path, seed in ((first, "0"), (again, "0"), (other, "1")):
        done = make(path, "--seed", seed)
        assert done.returncode == 0, done.stderr
    ckpt = llama2c.read_checkpoint(first)
    assert ckpt.config == llama2c.Llama2cConfig(32, 64, 2, 4, 2, 64, 24, True)
    assert ckpt.version == 0
    assert ckpt.weights["tok_embeddings"].shape == (64, 32)
    assert ckpt.weights["layers.1.attention.wk"].shape == (16, 32)
    assert ckpt.weights["layers.0.feed_forward.w2"].shape == (32, 64)
    assert np.all(ckpt.weights["layers.1.ffn_norm"] == 1) and np.all(ckpt.weights["norm"] == 1)
    w1 = ckpt.weights["layers.0.feed_forward.w1"]
    assert abs(w1.mean()) < 0.003 and 0.018 < w1.std() < 0.022
    # The same seed gives the same bytes; another seed other weights.
    assert first.read_bytes() == again.read_bytes()
    assert first.read_bytes() != other.read_bytes()
    assert len(first.read_bytes()) == len(other.read_bytes())


def test_make_checkpoint_preset_overrides_and_errors(tmp_path):
    done = subprocess.run([sys.executable, str(MAKE), "--shape", "15m", "--n-layers", "1", "--vocab-size", "50",
                           "--untied-classifier", "-o", str(tmp_path / "p.bin")],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    cfg = llama2c.read_checkpoint(tmp_path / "p.bin").config
    assert cfg == llama2c.Llama2cConfig(288, 768, 1, 6, 6, 50, 256, False)

    bad = make(tmp_path / "bad.bin", "--n-heads", "5")
    assert bad.returncode == 1
    assert bad.stderr.strip().splitlines() == [
        "make_checkpoint: error: invalid checkpoint header: dim 32 is not a multiple of n_heads 5"]
    assert not (tmp_path / "bad.bin").exists()


def test_bench_model_forward_tiny(tmp_path, gptq_run, gptq_opt):
    """The forward part end to end on a one-block model (stories260K's five
    blocks take half a minute to compile twice on a busy machine)."""
    build = gptq_run.parent.parent
    if not (build / "bin" / "gptq-opt").is_file():
        pytest.skip(f"gptq-opt is not next to {gptq_run}")
    checkpoint = tmp_path / "tiny.bin"
    assert make(checkpoint, "--n-layers", "1").returncode == 0
    out = tmp_path / "results.json"
    done = subprocess.run(
        [sys.executable, str(BENCH), "--build-dir", str(build), "--work-dir", str(tmp_path / "work"),
         "--models", str(checkpoint), "--batch", "2", "--seqlen", "16", "--repeats", "1",
         "--min-seconds", "0", "--rounds", "2", "--skip-gptq",
         "--torch-threads", "1", "--torch-openblas-override", "as-set", "--compile-cache", "keep",
         "--wait-quiet", "0", "--json", str(out)],
        capture_output=True, text=True, check=False, env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    assert f"| {checkpoint} | 2 x 16 | float32 |" in done.stdout
    assert f"| {checkpoint} | 2 x 16 | 4-bit g128 |" in done.stdout
    results = json.loads(out.read_text())
    (entry,) = results["forward"]
    assert entry["tokens"] == 32 and entry["import"]["mlir_bytes"] > 0
    assert entry["calls"] == 1 and "(calls per measurement: " in done.stdout
    assert set(entry["forms"]) == {"float32", "4-bit g128"}
    for form in entry["forms"].values():
        assert form["seconds"] > 0 and form["tokens_per_second"] > 0 and form["peak_rss_bytes"] > 0
        assert len(form["run_seconds"]) == 1 and form["compile_seconds"] >= 0
        # Two rounds: both kept, the better one counts.
        assert len(form["rounds"]) == 2 and form["seconds"] == min(r[0] for r in form["rounds"])
        # Ours computes what PyTorch computes (the 4-bit form against PyTorch
        # on the same round-to-nearest weights).
        assert form["max_relative_difference"] <= 1e-5
    # The 4-bit model is not the float one.
    f32, q4 = (np.load(entry["forms"][k]["logits"]) for k in ("float32", "4-bit g128"))
    assert np.abs(q4 - f32).max() > 1e-3 * np.abs(f32).max()
    assert [(s["threads"], s["openblas_override"]) for s in entry["torch"]] == [(1, "as set")]
    assert len(entry["torch"][0]["rounds"]) == 2 and "best of 2 round(s)" in done.stdout
    # IREE on the upstream form, where its packages are installed.
    try:
        import iree.compiler  # noqa: F401
        import iree.runtime  # noqa: F401
    except ImportError:
        assert "iree" not in entry and "IREE is not installed" in done.stderr
        return
    assert set(entry["iree"]) == {"float32", "4-bit g128"}
    for form, r in entry["iree"].items():
        assert "gptq" not in Path(r["upstream_module"]).read_text()
        assert r["iree"]["best"] > 0 and r["iree"]["compile_seconds"] > 0
        assert len(r["iree"]["rounds"]) == 2 and len(r["ours_upstream"]["rounds"]) == 2
        assert r["iree_max_relative_difference"] <= 1e-5
        assert r["upstream_max_relative_difference"] <= 1e-5
        assert f"| {checkpoint} | {form} |" in done.stdout


def test_short_calls_get_more_of_them():
    """Calls per measurement: --repeats, raised so that the calls after the
    first last about --min-seconds, at most 100."""
    import argparse
    import importlib.util
    spec = importlib.util.spec_from_file_location("bench_model_under_test", BENCH)
    bench = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(BENCH.parent))
    try:
        spec.loader.exec_module(bench)
    finally:
        sys.path.remove(str(BENCH.parent))
    args = argparse.Namespace(repeats=6, min_seconds=3.0)
    assert bench.calls_for(args, 3.0) == 6
    assert bench.calls_for(args, 0.075) == 41
    assert bench.calls_for(args, 0.001) == 100
    assert bench.calls_for(argparse.Namespace(repeats=6, min_seconds=0.0), 0.01) == 6
