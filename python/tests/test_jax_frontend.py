"""Modules written by a real frontend: JAX, through StableHLO.

examples/jax/export.py lowers two small JAX models, an MLP (Dense 16 -> 32,
exact GELU, Dense 32 -> 8) and a transformer block (RMSNorm, causal
multi-head attention with q/k/v/o projections, SwiGLU MLP, residuals), in
two forms: the weights closed over (constants of @main) and the weights as
arguments of @main named by their locations (``params['attn']['q']['kernel']``),
with the safetensors archive of those weights. The tools read the StableHLO
through iree-opt. Then: gptq-run computes what JAX does (1e-5 relative);
gptq-quantize-model quantizes the layers it should (the MLP's last one, whose
result @main returns, stays float as the classifier; the block's down
projection, followed by the residual add, does not); the arguments form with
parameters= quantizes the same layers under the params' names and computes
byte for byte what the constants form does, its weight arguments unread; the
Hessians of sequential calibration are those of the model with the earlier
layers quantized; and IREE runs the upstream form of both quantized forms
within 1e-5 of gptq-run.

Needs a Python with JAX ($GPTQ_JAX_PYTHON, else .venv-jax, which
scripts/test-deps.sh makes) and iree-opt (iree-base-compiler); the IREE test
needs iree.compiler and iree.runtime as well. Each skips without them.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from iree_helpers import iree_context, relative

REPO_ROOT = Path(__file__).resolve().parents[2]
EXPORT = REPO_ROOT / "examples" / "jax" / "export.py"

#: Each model's layers in the order they are quantized: the constants
#: form's names, the arguments form's names, and (out, in).
LAYERS = {
    "mlp": [("linear.0", "params['dense1']['kernel']", 32, 16)],
    "block": [
        ("linear.0", "params['attn']['q']['kernel']", 32, 32),
        ("linear.1", "params['attn']['k']['kernel']", 32, 32),
        ("linear.2", "params['attn']['v']['kernel']", 32, 32),
        ("linear.3", "params['attn']['o']['kernel']", 32, 32),
        ("linear.4", "params['mlp']['gate']['kernel']", 64, 32),
        ("linear.5", "params['mlp']['up']['kernel']", 64, 32),
        ("linear.6", "params['mlp']['down']['kernel']", 32, 64),
    ],
}
#: How many weights parameters= binds: every leaf of the params.
BOUND = {"mlp": 4, "block": 9}
QUANTIZE = "bits=4 calibration=calib.npy calibration-batch=4"


@pytest.fixture(scope="module")
def jax_python() -> Path:
    configured = os.environ.get("GPTQ_JAX_PYTHON")
    path = Path(configured) if configured else REPO_ROOT / ".venv-jax" / "bin" / "python"
    if configured and not path.is_file():
        pytest.skip(f"$GPTQ_JAX_PYTHON={configured} is not a file")
    if not path.is_file():
        pytest.skip("JAX is not installed (scripts/test-deps.sh makes .venv-jax)")
    return path


@pytest.fixture(scope="module")
def tool_env() -> dict:
    """The environment of gptq-opt and gptq-run: GPTQ_IREE_OPT names the
    iree-opt that converts the StableHLO."""
    found = os.environ.get("GPTQ_IREE_OPT") or shutil.which("iree-opt")
    beside = Path(sys.executable).parent / "iree-opt"
    if not found and beside.is_file():
        found = str(beside)
    if not found or not Path(found).is_file():
        pytest.skip("iree-opt is not installed (iree-base-compiler, scripts/test-deps.sh)")
    return {**os.environ, "GPTQ_IREE_OPT": os.path.abspath(found)}


def _tool(env: dict, cwd: Path, *command) -> subprocess.CompletedProcess:
    """A tool run in `cwd`, the model's folder, on the names of its files:
    the modules' locations, and so the compile cache's keys, are the same
    from one run of the tests to the next."""
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True, env=env, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return result


@pytest.fixture(scope="module", params=["mlp", "block"])
def model(request, jax_python, tmp_path_factory) -> dict:
    """export.py's files for one model, in a folder of their own (the
    file names below are relative to it)."""
    name = request.param
    directory = tmp_path_factory.mktemp(name)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    result = subprocess.run(
        [str(jax_python), str(EXPORT), name, str(directory)], capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stderr
    return {
        "name": name,
        "dir": directory,
        "const": f"{name}.const.stablehlo.mlir",
        "args": f"{name}.args.stablehlo.mlir",
        "params": f"{name}.params.safetensors",
        "x": np.load(directory / "x.npy"),
        "ref": np.load(directory / "ref.npy"),
    }


def _run(gptq_run: Path, env: dict, model: dict, module: str, out: str, *inputs: str):
    """gptq-run's result, and its stderr."""
    args = [a for i in inputs for a in ("--input", i)]
    result = _tool(env, model["dir"], gptq_run, module, *args, "--output-dir", out)
    return np.load(model["dir"] / out / "0.npy"), result.stderr


def _zeros(gptq_run: Path, env: dict, model: dict, module: str) -> list:
    """Zeros for the weight arguments of the arguments form: all of @main's
    arguments but the last, x, in their order, as --describe gives them."""
    described = json.loads(_tool(env, model["dir"], gptq_run, module, "--describe").stdout)
    (main,) = [f for f in described["functions"] if f["name"] == "main"]
    names = []
    for i, argument in enumerate(main["inputs"][:-1]):
        assert argument["dtype"] == "float32", argument
        names.append(f"zeros{i}.npy")
        np.save(model["dir"] / names[-1], np.zeros(argument["shape"], np.float32))
    return names


@pytest.fixture(scope="module")
def float_run(model, gptq_run, tool_env):
    """gptq-run's output for x of the constants form, and its stderr."""
    return _run(gptq_run, tool_env, model, model["const"], "float", "x.npy")


@pytest.fixture(scope="module")
def quantized(model, gptq_opt, gptq_run, tool_env) -> dict:
    """Both forms quantized to 4 bits, their reports, and gptq-run's outputs
    for x (the arguments form called with zeros for its weights)."""
    d = model["dir"]
    _tool(tool_env, d, gptq_opt, model["const"],
          f"--gptq-quantize-model={QUANTIZE} report=q.json", "-o", "q.mlir")
    args = _tool(tool_env, d, gptq_opt, model["args"],
                 f"--gptq-quantize-model={QUANTIZE} parameters={model['params']} report=qa.json", "-o", "qa.mlir")
    zeros = _zeros(gptq_run, tool_env, model, "qa.mlir")
    return {
        "report": json.loads((d / "q.json").read_text()),
        "args_report": json.loads((d / "qa.json").read_text()),
        "args_log": args.stderr,
        "zeros": zeros,
        "out": _run(gptq_run, tool_env, model, "q.mlir", "out-q", "x.npy")[0],
        "args_out": _run(gptq_run, tool_env, model, "qa.mlir", "out-qa", *zeros, "x.npy")[0],
    }


def test_float_module_matches_jax(model, float_run):
    got, log = float_run
    assert "holds StableHLO" in log and "converted to linalg by" in log
    assert got.shape == model["ref"].shape
    assert relative(model["ref"], got) <= 1e-5


def test_constants_form_quantizes_its_layers(model, quantized, float_run):
    """The MLP's second Dense, whose result @main returns, stays float as
    the classifier; every projection of the block is quantized."""
    report, layers = quantized["report"], LAYERS[model["name"]]
    assert report["entry"] == "main"
    assert [(l["name"], l["out"], l["in"]) for l in report["layers"]] == [(n, o, i) for n, _, o, i in layers]
    assert report["weight_bytes"] == 4 * sum(o * i for _, _, o, i in layers)
    text = (model["dir"] / "q.mlir").read_text()
    assert text.count("gptq.dequantize") == len(layers)
    if model["name"] == "mlp":
        assert re.search(r"arith\.constant dense<[^>]*> : tensor<32x8xf32>", text)
    assert 1e-3 < relative(float_run[0], quantized["out"]) < 0.2


def test_arguments_form_with_parameters_is_the_constants_form(model, quantized):
    """parameters= binds every leaf of the params by its name; the layers
    take those names, and are quantized as the constants form's are."""
    assert f"binds {BOUND[model['name']]} of the arguments of '@main'" in quantized["args_log"]
    layers = quantized["args_report"]["layers"]
    assert [(l["name"], l["out"], l["in"]) for l in layers] == [(a, o, i) for _, a, o, i in LAYERS[model["name"]]]
    assert [l["error"] for l in layers] == [l["error"] for l in quantized["report"]["layers"]]
    assert len(quantized["zeros"]) == BOUND[model["name"]]
    assert quantized["args_out"].tobytes() == quantized["out"].tobytes()


def test_sequential_hessians_are_those_of_the_quantized_prefix(model, gptq_opt, tool_env):
    """Each Hessian that sequential calibration (the default) uses is the
    one of the model whose earlier layers are quantized: the float-format
    output, calibrated again with sequential=none, gives the same (matched
    by order: that output has lost the locations, so its layers are
    linear.N); the float model's own differ after the first stage. The
    MLP's classifier is quantized too (classifier=true), so that its second
    layer has a quantized layer before it."""
    d = model["dir"]
    options = QUANTIZE + (" classifier=true" if model["name"] == "mlp" else "")
    _tool(tool_env, d, gptq_opt, model["const"],
          f"--gptq-quantize-model={options} format=float dump-hessians=h.npz", "-o", "f.mlir")
    _tool(tool_env, d, gptq_opt, "f.mlir",
          f"--gptq-quantize-model={options} sequential=none dump-hessians=ref.npz", "-o", os.devnull)
    _tool(tool_env, d, gptq_opt, model["const"],
          f"--gptq-quantize-model={options} sequential=none dump-hessians=float.npz", "-o", os.devnull)
    used, reference, float_ = (np.load(d / f) for f in ("h.npz", "ref.npz", "float.npz"))
    first_stage = {"block": ("linear.0", "linear.1", "linear.2"), "mlp": ("linear.0",)}[model["name"]]
    assert len(used.files) == {"block": 7, "mlp": 2}[model["name"]]
    assert len(reference.files) == len(used.files) == len(float_.files)
    for name, ref_name, float_name in zip(used.files, reference.files, float_.files):
        assert used[name].shape == reference[ref_name].shape
        assert relative(used[name], reference[ref_name]) <= 1e-6, name
        # The first stage reads the input; later ones see quantized layers.
        assert (relative(used[name], float_[float_name]) > 1e-4) == (name not in first_stage)


def test_iree_runs_the_upstream_form_of_both_quantized_forms(model, quantized, gptq_opt, tool_env):
    d = model["dir"]
    zeros = [np.load(d / name) for name in quantized["zeros"]]
    for module, inputs in (("q.mlir", [model["x"]]), ("qa.mlir", [*zeros, model["x"]])):
        upstream = module.replace(".mlir", ".upstream.mlir")
        _tool(tool_env, d, gptq_opt, module, "--gptq-to-upstream-pipeline", "-o", upstream)
        assert "gptq" not in (d / upstream).read_text()
        context = iree_context(d / upstream)
        # The VM module has the MLIR module's name, JAX's: jit__lambda, jit_mlp_apply.
        (vm_module,) = [m for n, m in context.modules.items() if n != "hal"]
        theirs = np.asarray(vm_module["main"](*inputs).to_host())
        assert relative(quantized["out"], theirs) <= 1e-5, module
