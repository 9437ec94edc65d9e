"""The upstream-only form (gptq-to-upstream-pipeline) compiled and run by
IREE (iree-base-compiler and iree-base-runtime, llvm-cpu on local-task):
logits within 1e-5 of ours, for stories260K in float32 and quantized to 4
bits (GPTQ with and without act-order), for a Hugging Face import whose
weights stay in its checkpoint, and for prefill and decode with the KV
caches as tensor arguments and results. Skips without the IREE packages
(scripts/test-deps.sh installs them)."""

import subprocess
from pathlib import Path

import numpy as np
import pytest

from gptq_mlir.cli import main
from gptq_mlir.model import Model

ireec = pytest.importorskip("iree.compiler", reason="iree-base-compiler is not installed (scripts/test-deps.sh)")
ireert = pytest.importorskip("iree.runtime", reason="iree-base-runtime is not installed (scripts/test-deps.sh)")

#: The command line the issue and docs/pipelines.md give.
IREE_FLAGS = [
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=host",
]


def _relative(ours: np.ndarray, theirs: np.ndarray) -> float:
    return float(np.abs(ours - theirs).max() / np.abs(ours).max())


def _upstream(gptq_opt: Path, module: Path, out: Path, *options: str) -> Path:
    result = subprocess.run(
        [str(gptq_opt), str(module), "--gptq-to-upstream-pipeline", *options, "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert "gptq" not in text, "an op, type or attribute of ours is left"
    return out


def _forward_only(gptq_opt: Path, module: Path) -> Path:
    """``module`` with @forward and what it calls alone (upstream
    symbol-privatize and symbol-dce): IREE compiles the one entry a test
    calls on it. test_float32_forward_prefill_and_decode compiles and runs
    @prefill and @decode, whose KV caches are what they add to @forward."""
    out = module.with_name(module.stem + ".forward.mlir")
    result = subprocess.run(
        [str(gptq_opt), str(module), "--symbol-privatize=exclude=forward", "--symbol-dce", "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert "func.func @forward" in text and "@decode" not in text and "gptq" not in text
    return out


def _iree(module: Path):
    vmfb = ireec.compile_file(str(module), extra_args=IREE_FLAGS)
    context = ireert.SystemContext(config=ireert.Config("local-task"))
    context.add_vm_module(ireert.VmModule.copy_buffer(context.instance, vmfb))
    return context.modules.module


def _host(value) -> np.ndarray:
    return np.asarray(value.to_host())


@pytest.fixture(scope="module")
def tokens() -> np.ndarray:
    return np.random.default_rng(5).integers(0, 512, size=(2, 16)).astype(np.int32)


@pytest.fixture(scope="module")
def calibration(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("calibration") / "calib.npy"
    np.save(path, np.random.default_rng(3).integers(0, 512, size=(4, 32)).astype(np.int32))
    return path


def test_float32_forward_prefill_and_decode(gptq_opt, stories_mlir, tmp_path, tokens):
    upstream = _upstream(gptq_opt, stories_mlir, tmp_path / "upstream.mlir")
    iree = _iree(upstream)
    ours = Model(stories_mlir)
    expected = ours.logits(tokens)
    assert _relative(expected, _host(iree["forward"](tokens))) <= 1e-5

    # The caches go in and come back: prefill the prompt, then decode two
    # tokens, against our in-place caches.
    caches = ours.new_caches(2, 24)
    k, v = (np.copy(c) for c in caches)
    expected = ours.prefill(tokens[:, :8], caches)
    logits, k, v = (_host(x) for x in iree["prefill"](tokens[:, :8], k, v))
    assert _relative(expected, logits) <= 1e-5
    np.testing.assert_allclose(k, caches[0], rtol=1e-5, atol=1e-6)
    for position in (8, 9):
        step = tokens[:, position]
        expected = ours.decode(step, position, caches)
        logits, k, v = (_host(x) for x in iree["decode"](step, position, k, v))
        assert _relative(expected, logits) <= 1e-5
    np.testing.assert_allclose(v, caches[1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("act_order", ["false", "true"])
def test_gptq_4bit_forward(gptq_opt, stories_mlir, tmp_path, tokens, calibration, act_order):
    quantized = tmp_path / "q.mlir"
    result = subprocess.run(
        [
            str(gptq_opt),
            str(stories_mlir),
            f"--gptq-quantize-model=calibration={calibration} calibration-batch=4 bits=4 group-size=32 "
            f"act-order={act_order}",
            "-o",
            str(quantized),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "gptq.dequantize" in quantized.read_text()
    upstream = _upstream(gptq_opt, quantized, tmp_path / "upstream.mlir")
    assert "quant." not in upstream.read_text()  # lowered to linalg
    expected = Model(quantized).logits(tokens)
    assert _relative(expected, _host(_iree(_forward_only(gptq_opt, upstream))["forward"](tokens))) <= 1e-5
    # Our own run of the upstream form computes the same.
    assert _relative(expected, Model(upstream).logits(tokens)) <= 1e-5


def test_hugging_face_import_with_weights_in_its_checkpoint(gptq_opt, checkpoint_path, tmp_path, tokens):
    from gptq_mlir import llama2c
    from hf_convert import write_hf_checkpoint

    folder = write_hf_checkpoint(llama2c.read_checkpoint(checkpoint_path), tmp_path / "hf")
    imported = tmp_path / "hf.mlir"
    assert main(["import-hf", str(folder), "-o", str(imported)]) == 0
    assert "gptq.parameters" in imported.read_text().splitlines()[0]
    # gptq-opt attaches the checkpoint's weights and, the pipeline ending in
    # upstream MLIR, writes them into the output rather than naming it.
    upstream = _upstream(gptq_opt, imported, tmp_path / "upstream.mlir")
    assert not (tmp_path / "upstream.safetensors").exists()
    expected = Model(imported).logits(tokens)
    assert _relative(expected, _host(_iree(_forward_only(gptq_opt, upstream))["forward"](tokens))) <= 1e-5
