"""The upstream-only form (gptq-to-upstream-pipeline) compiled and run by
IREE (iree-base-compiler and iree-base-runtime, llvm-cpu on local-task):
logits within 1e-5 of ours, for stories260K in float32 and quantized to 4
bits (GPTQ with and without act-order), for a Hugging Face import whose
weights stay in its checkpoint, and for prefill and decode with the KV
caches as tensor arguments and results. Skips without the IREE packages
(scripts/test-deps.sh installs them)."""

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from gptq_mlir.cli.commands import main
from gptq_mlir.runtime.model import Model
from iree_helpers import iree_context, relative, upstream_form

pytest.importorskip("iree.compiler", reason="iree-base-compiler is not installed (scripts/test-deps.sh)")
pytest.importorskip("iree.runtime", reason="iree-base-runtime is not installed (scripts/test-deps.sh)")


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
    return iree_context(module).modules.module


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
    upstream = upstream_form(gptq_opt, stories_mlir, tmp_path / "upstream.mlir")
    iree = _iree(upstream)
    ours = Model(stories_mlir)
    expected = ours.logits(tokens)
    assert relative(expected, _host(iree["forward"](tokens))) <= 1e-5

    # The caches go in and come back: prefill the prompt, then decode two
    # tokens, against our in-place caches.
    caches = ours.new_caches(2, 24)
    k, v = (np.copy(c) for c in caches)
    expected = ours.prefill(tokens[:, :8], caches)
    logits, k, v = (_host(x) for x in iree["prefill"](tokens[:, :8], k, v))
    assert relative(expected, logits) <= 1e-5
    np.testing.assert_allclose(k, caches[0], rtol=1e-5, atol=1e-6)
    for position in (8, 9):
        step = tokens[:, position]
        expected = ours.decode(step, position, caches)
        logits, k, v = (_host(x) for x in iree["decode"](step, position, k, v))
        assert relative(expected, logits) <= 1e-5
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
    upstream = upstream_form(gptq_opt, quantized, tmp_path / "upstream.mlir")
    assert "quant." not in upstream.read_text()  # lowered to linalg
    expected = Model(quantized).logits(tokens)
    assert relative(expected, _host(_iree(_forward_only(gptq_opt, upstream))["forward"](tokens))) <= 1e-5
    # Our own run of the upstream form computes the same.
    assert relative(expected, Model(upstream).logits(tokens)) <= 1e-5


def test_hugging_face_import_with_weights_in_its_checkpoint(gptq_opt, checkpoint_path, tmp_path, tokens):
    from gptq_mlir.importers import llama2c
    from hf_convert import write_hf_checkpoint

    folder = write_hf_checkpoint(llama2c.read_checkpoint(checkpoint_path), tmp_path / "hf")
    imported = tmp_path / "hf.mlir"
    assert main(["import-hf", str(folder), "-o", str(imported)]) == 0
    assert "gptq.parameters" in imported.read_text().splitlines()[0]
    # gptq-opt attaches the checkpoint's weights and, the pipeline ending in
    # upstream MLIR, writes them into the output rather than naming it.
    upstream = upstream_form(gptq_opt, imported, tmp_path / "upstream.mlir")
    assert not (tmp_path / "upstream.safetensors").exists()
    expected = Model(imported).logits(tokens)
    assert relative(expected, _host(_iree(_forward_only(gptq_opt, upstream))["forward"](tokens))) <= 1e-5


def _gelu_mlp(approximate: str) -> str:
    """A two-layer MLP as a frontend writes it (weights as constants, in x
    out), with torch.nn.GELU's exact form (math.erf) or its tanh form."""
    rng = np.random.default_rng(11)
    w1 = rng.standard_normal((16, 32)).astype(np.float32) / 4
    b1 = rng.standard_normal(32).astype(np.float32) / 10
    w2 = rng.standard_normal((32, 8)).astype(np.float32) / 6

    def dense(a: np.ndarray) -> str:
        return "dense<" + np.array2string(a, separator=", ", threshold=10**9, floatmode="unique").replace("\n", "") + ">"

    if approximate == "none":
        gelu = """
    %c = arith.constant 0.707106769 : f32
    %s = arith.mulf %v, %c : f32
    %e = math.erf %s : f32"""
    else:
        gelu = """
    %k = arith.constant 0.797884583 : f32
    %c = arith.constant 0.044715 : f32
    %v2 = arith.mulf %v, %v : f32
    %v3 = arith.mulf %v2, %v : f32
    %cv3 = arith.mulf %c, %v3 : f32
    %in = arith.addf %v, %cv3 : f32
    %s = arith.mulf %k, %in : f32
    %e = math.tanh %s : f32"""
    return f"""
#rows = affine_map<(i, j) -> (i, j)>
#bias = affine_map<(i, j) -> (j)>
func.func @main(%x: tensor<?x16xf32>) -> tensor<?x8xf32> {{
  %w1 = arith.constant {dense(w1)} : tensor<16x32xf32>
  %b1 = arith.constant {dense(b1)} : tensor<32xf32>
  %w2 = arith.constant {dense(w2)} : tensor<32x8xf32>
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x16xf32>
  %e1 = tensor.empty(%n) : tensor<?x32xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<?x32xf32>) -> tensor<?x32xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<?x16xf32>, tensor<16x32xf32>) outs(%f1 : tensor<?x32xf32>) -> tensor<?x32xf32>
  %g = linalg.generic {{indexing_maps = [#rows, #bias, #rows], iterator_types = ["parallel", "parallel"]}}
      ins(%h, %b1 : tensor<?x32xf32>, tensor<32xf32>) outs(%e1 : tensor<?x32xf32>) {{
  ^bb0(%hv: f32, %bv: f32, %o: f32):
    %v = arith.addf %hv, %bv : f32
    %one = arith.constant 1.0 : f32
    %half = arith.constant 0.5 : f32{gelu}
    %p = arith.addf %e, %one : f32
    %hv2 = arith.mulf %v, %half : f32
    %y = arith.mulf %hv2, %p : f32
    linalg.yield %y : f32
  }} -> tensor<?x32xf32>
  %e2 = tensor.empty(%n) : tensor<?x8xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<?x8xf32>) -> tensor<?x8xf32>
  %out = linalg.matmul ins(%g, %w2 : tensor<?x32xf32>, tensor<32x8xf32>) outs(%f2 : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %out : tensor<?x8xf32>
}}
"""


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_mlp_quantized_runs_in_gptq_run_and_iree(gptq_opt, gptq_run, tmp_path, approximate):
    """An MLP with the exact GELU (math.erf) or the tanh GELU quantizes to
    4 bits (its first layer: the second, whose result the function returns,
    stays float as the output classifier), runs in gptq-run, and IREE runs
    the upstream form of the quantized module within 1e-5 of it."""
    model = tmp_path / "mlp.mlir"
    model.write_text(_gelu_mlp(approximate))
    rng = np.random.default_rng(12)
    np.save(tmp_path / "calib.npy", rng.standard_normal((64, 16)).astype(np.float32))
    x = rng.standard_normal((5, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    quantized = tmp_path / "mlp.q.mlir"
    result = subprocess.run(
        [str(gptq_opt), str(model), f"--gptq-quantize-model=bits=4 calibration={tmp_path / 'calib.npy'} report={tmp_path / 'report.json'}",
         "-o", str(quantized)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert [layer["name"] for layer in report["layers"]] == ["linear.0"]
    outputs = {}
    for name, module in (("float", model), ("quantized", quantized)):
        run = subprocess.run(
            [str(gptq_run), str(module), "--input", str(tmp_path / "x.npy"), "--output-dir", str(tmp_path / name)],
            capture_output=True,
            text=True,
        )
        assert run.returncode == 0, run.stderr
        outputs[name] = np.load(tmp_path / name / "0.npy")
    # Quantized, not the float model, and close to it.
    assert 1e-3 < relative(outputs["float"], outputs["quantized"]) < 0.3
    upstream = upstream_form(gptq_opt, quantized, tmp_path / "mlp.upstream.mlir")
    theirs = _host(_iree(upstream).main(x))
    assert relative(outputs["quantized"], theirs) < 1e-5
