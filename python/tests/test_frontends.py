"""Modules written by a real frontend: torch-mlir's ONNX path.

A PyTorch MLP (``nn.Linear(16, 32)``, ``nn.GELU`` exact or tanh,
``nn.Linear(32, 8)``) goes through ``torch.onnx.export`` (opset 17, dynamic
batch) and torch-mlir's ONNX importer and pipelines to linalg on tensors,
printed with locations as ``import-torch`` prints them. Then, with nothing
told about the module: its layers take their names from the ONNX nodes
(``/0/Gemm`` -> ``0``: the PyTorch module names), gptq-quantize-model finds
the entry (``@torch_jit``) and quantizes the first layer, the last one,
whose result the function returns, staying float as the output classifier;
gptq-run runs the float module as PyTorch does (1e-5 relative) and the
quantized one close to it; IREE runs the upstream form of the quantized one
within 1e-5 of gptq-run. And libGPTQPlugin.so, loaded into torch-mlir's own
``torch-mlir-opt`` (which has its own MLIR built in), refuses cleanly,
while loaded into LLVM's upstream ``mlir-opt`` it quantizes the MLP to the
very module gptq-opt writes.

A tiny Hugging Face ``LlamaForCausalLM`` (2 blocks, random, eager
attention; int64 token ids in, logits out) takes the same path with
dynamic batch and sequence: its layers are named after the transformers
modules (``/model/layers.0/self_attn/q_proj/MatMul`` ->
``model.layers.0.self_attn.q_proj``), 14 in 2 blocks and ``lm_head``, the
output classifier, in none; gptq-run runs it as transformers does (1e-5
relative), and gptq-quantize-model, told the vocabulary (the module has no
``gptq.model`` attribute), quantizes the 14 on token samples and keeps
``lm_head`` float.

Needs torch-mlir and onnx (docs/torch-mlir.md), transformers for the Llama
tests and IREE for its test; each skips without them.
"""

import json
import re
import subprocess
import warnings
from pathlib import Path
from typing import Tuple

import numpy as np
import pytest

from gptq_mlir.importers.torch_import import export_module
from gptq_mlir.importers.torch_mlir_lowering import lower
from iree_helpers import iree_context, relative, upstream_form

torch_mlir = pytest.importorskip("torch_mlir", reason="torch-mlir is not installed (scripts/test-deps.sh)")

def _run(*command) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in command], capture_output=True, text=True)


def _lower(model, example, dynamic=("batch",)) -> str:
    """What import-torch does, for any module: ONNX export (opset 17, the
    leading dimensions of input and output dynamic, named by ``dynamic``:
    the batch, or batch and sequence) with shape inference, then torch-mlir's
    ONNX importer and its two pipelines (in a process of their own:
    torch-mlir cannot load where this package's native library has run);
    printed with locations (the ONNX node names)."""
    pytest.importorskip("onnx", reason="onnx is not installed (scripts/test-deps.sh)")
    return lower(export_module(model, example, ("x", "y"), dynamic))


@pytest.fixture(scope="module", params=["none", "tanh"])
def mlp(request, tmp_path_factory):
    """The MLP with the exact or the tanh GELU, lowered by torch-mlir; its
    entry's name, PyTorch's names of its Linear layers, an input and
    PyTorch's output for it, and calibration samples."""
    import torch
    from torch import nn

    directory = tmp_path_factory.mktemp(f"gelu-{request.param}")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(approximate=request.param), nn.Linear(32, 8)).eval()
    path = directory / "mlp.mlir"
    path.write_text(_lower(model, torch.randn(2, 16)))
    text = path.read_text()
    assert ("math.erf" in text) == (request.param == "none")
    assert ("math.tanh" in text) == (request.param == "tanh")
    entries = re.findall(r"func\.func @([\w.$-]+)\(", text)
    assert len(entries) == 1 and entries[0] in ("torch_jit", "main"), entries

    rng = np.random.default_rng(12)
    x = rng.standard_normal((5, 16)).astype(np.float32)
    np.save(directory / "x.npy", x)
    np.save(directory / "calib.npy", rng.standard_normal((64, 16)).astype(np.float32))
    with torch.no_grad():
        expected = model(torch.from_numpy(x)).numpy()
    linears = [name for name, m in model.named_modules() if isinstance(m, nn.Linear)]
    return {
        "dir": directory,
        "path": path,
        "entry": entries[0],
        "linears": linears,
        "x": x,
        "expected": expected,
    }


def _quantize(gptq_opt: Path, module: Path, output: Path, options: str) -> dict:
    """``module`` through --gptq-quantize-model with ``options`` (4 bits,
    the calibration samples beside it, a report) into ``output``; the
    report."""
    report = module.parent / "report.json"
    result = _run(
        gptq_opt,
        module,
        f"--gptq-quantize-model=bits=4 calibration={module.parent / 'calib.npy'} report={report} {options}",
        "-o",
        output,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(report.read_text())


def _list_linears(gptq_opt: Path, module: Path) -> Tuple[list, str]:
    """--gptq-list-linears on ``module``: (name, out, in, block, classifier
    mark) of each layer, and the whole listing."""
    result = _run(gptq_opt, module, "--gptq-list-linears", "-o", "/dev/null")
    assert result.returncode == 0, result.stderr
    pattern = r"linear layer '([^']*)': (\d+) x (\d+), ([^,]*), .*?( \(output classifier\))?$"
    return re.findall(pattern, result.stderr, re.M), result.stderr


@pytest.fixture(scope="module")
def quantized(mlp, gptq_opt):
    """The MLP quantized to 4 bits with no entry= given; its report."""
    output = mlp["dir"] / "mlp.q.mlir"
    return output, _quantize(gptq_opt, mlp["path"], output, "")


def _gptq_run(gptq_run: Path, module: Path, mlp: dict, name: str) -> np.ndarray:
    # No --entry: gptq-run calls the module's one entry, @torch_jit.
    out = mlp["dir"] / f"out-{name}"
    result = _run(gptq_run, module, "--input", mlp["dir"] / "x.npy", "--output-dir", out)
    assert result.returncode == 0, result.stderr
    return np.load(out / "0.npy")


def test_layer_names_are_the_pytorch_module_names(mlp, gptq_opt):
    """torch-mlir names each op after its ONNX node (`/0/Gemm`); the layer
    takes the node's scope, which is the nn.Sequential's name for it."""
    assert mlp["linears"] == ["0", "2"]
    layers, listing = _list_linears(gptq_opt, mlp["path"])
    assert layers == [
        ("0", "32", "16", "block 0", ""),
        ("2", "8", "32", "block 1", " (output classifier)"),
    ], listing
    assert 'loc("/0/Gemm")' in listing and 'loc("/2/Gemm")' in listing


def test_float_module_matches_pytorch(mlp, gptq_run):
    got = _gptq_run(gptq_run, mlp["path"], mlp, "float")
    assert got.shape == (5, 8)
    assert relative(mlp["expected"], got) <= 1e-5


def test_quantized_without_entry_option(mlp, quantized, gptq_run):
    """The entry is found by default; the first Linear is quantized, the
    last, the output classifier, stays float."""
    output, report = quantized
    assert report["entry"] == mlp["entry"]
    assert [(layer["name"], layer["out"], layer["in"]) for layer in report["layers"]] == [("0", 32, 16)]
    assert report["config"]["bits"] == 4
    text = output.read_text()
    assert "gptq.dequantize" in text
    # The classifier's weight is still a float constant of 8 x 32.
    assert re.search(r"arith\.constant dense<[^>]*> : tensor<8x32xf32>", text)
    got = _gptq_run(gptq_run, output, mlp, "quantized")
    float_ = _gptq_run(gptq_run, mlp["path"], mlp, "float")
    assert 1e-3 < relative(float_, got) < 0.3


def test_iree_runs_the_upstream_form_of_the_quantized_module(mlp, quantized, gptq_opt, gptq_run):
    output, _ = quantized
    module = upstream_form(gptq_opt, output, mlp["dir"] / "mlp.upstream.mlir")
    ours = _gptq_run(gptq_run, output, mlp, "quantized")
    theirs = np.asarray(iree_context(module).modules.module[mlp["entry"]](mlp["x"]).to_host())
    assert relative(ours, theirs) <= 1e-5


def _plugin(gptq_opt: Path) -> Path:
    plugin = gptq_opt.parent.parent / "lib" / "libGPTQPlugin.so"
    if not plugin.is_file():
        pytest.skip(f"libGPTQPlugin.so is not built (looked at {plugin})")
    return plugin


def test_plugin_in_mlir_opt_quantizes_as_gptq_opt(mlp, quantized, gptq_opt, gptq_run, mlir_opt):
    """Upstream mlir-opt (LLVM 22, the MLIR the plugin is built on) with
    libGPTQPlugin.so runs gptq-quantize-model named in --pass-pipeline and
    writes gptq-opt's quantized module byte for byte (docs/pipelines.md),
    which gptq-run runs to the very same output."""
    plugin = _plugin(gptq_opt)
    output = mlp["dir"] / "mlp.plugin.mlir"
    result = _run(
        mlir_opt,
        f"--load-dialect-plugin={plugin}",
        f"--load-pass-plugin={plugin}",
        mlp["path"],
        f"--pass-pipeline=builtin.module(gptq-quantize-model{{bits=4 calibration={mlp['dir'] / 'calib.npy'}}})",
        "-o",
        output,
    )
    assert result.returncode == 0, result.stderr
    text = output.read_text()
    assert "gptq.dequantize" in text
    assert text == quantized[0].read_text()
    theirs = _gptq_run(gptq_run, output, mlp, "plugin")
    ours = _gptq_run(gptq_run, quantized[0], mlp, "quantized")
    assert theirs.shape == (5, 8)
    assert theirs.tobytes() == ours.tobytes()


def test_plugin_in_torch_mlir_opt_refuses_cleanly(gptq_opt, tmp_path):
    """torch-mlir-opt has its own MLIR built in; libGPTQPlugin.so, built on
    the system's libMLIR.so, registers nothing and says so, instead of
    crashing (exit status 1, not a signal)."""
    # Found, not imported: torch-mlir's libraries abort a process where
    # this package's native library has run.
    driver = Path(list(torch_mlir.__path__)[0]) / "_mlir_libs" / "torch-mlir-opt"
    if not driver.is_file():
        pytest.skip(f"{driver} is not in this torch-mlir")
    plugin = _plugin(gptq_opt)
    module = tmp_path / "small.mlir"
    module.write_text(
        "func.func @main(%x: tensor<2x4xf32>, %w: tensor<4x3xf32>, %o: tensor<2x3xf32>) -> tensor<2x3xf32> {\n"
        "  %y = linalg.matmul ins(%x, %w : tensor<2x4xf32>, tensor<4x3xf32>) outs(%o : tensor<2x3xf32>) -> tensor<2x3xf32>\n"
        "  return %y : tensor<2x3xf32>\n"
        "}\n"
    )
    result = _run(
        driver,
        module,
        f"--load-dialect-plugin={plugin}",
        f"--load-pass-plugin={plugin}",
        "--pass-pipeline=builtin.module(gptq-list-linears)",
    )
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert "error: libGPTQPlugin.so is built on" in result.stderr
    assert "nothing was registered" in result.stderr


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    """A tiny random Hugging Face LlamaForCausalLM taking int64 token ids
    [batch, seq] and returning its logits, lowered by torch-mlir with
    dynamic batch and sequence; transformers' names and shapes of its Linear
    layers, tokens of another batch and length than the export's and
    transformers' logits for them, and calibration tokens."""
    transformers = pytest.importorskip("transformers", reason="transformers is not installed (scripts/test-deps.sh)")
    import torch
    from torch import nn

    class LogitsOnly(transformers.LlamaForCausalLM):
        """Tokens in, logits out (no cache, no output class). A subclass
        rather than a wrapper module, so that the ONNX nodes' scopes are
        transformers' module names (`/model/layers.0/...`, `/lm_head/...`)
        with no wrapper's attribute before them."""

        def forward(self, input_ids):
            return super().forward(input_ids=input_ids, use_cache=False).logits

    directory = tmp_path_factory.mktemp("llama")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        attn_implementation="eager",
    )
    model = LogitsOnly(config).eval()
    assert model.config._attn_implementation == "eager"
    path = directory / "llama.mlir"
    with warnings.catch_warnings():
        # transformers' shape checks, traced as constants: the causal mask's
        # `sequence_length != 1` holds for every length the tests use.
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        path.write_text(_lower(model, torch.zeros((1, 8), dtype=torch.int64), ("batch", "seq")))
    entries = re.findall(r"func\.func @([\w.$-]+)\(%arg0: (\S+) .*\) -> (\S+) \{", path.read_text())
    assert entries == [("torch_jit", "tensor<?x?xi64>", "tensor<?x?x64xf32>")], entries

    rng = np.random.default_rng(7)
    x = rng.integers(0, 64, (3, 11)).astype(np.int64)
    np.save(directory / "x.npy", x)
    np.save(directory / "calib.npy", rng.integers(0, 64, (16, 16)).astype(np.int64))
    with torch.no_grad():
        expected = model(torch.from_numpy(x)).numpy()
    linears = [(name, m.out_features, m.in_features) for name, m in model.named_modules() if isinstance(m, nn.Linear)]
    return {"dir": directory, "path": path, "linears": linears, "x": x, "expected": expected}


def test_llama_layer_names_are_the_hugging_face_module_names(llama, gptq_opt):
    """`/model/layers.0/self_attn/q_proj/MatMul` -> `model.layers.0.self_attn.q_proj`
    in block 0; `lm_head` in no block, the output classifier. The rotary
    embedding's MatMul (its constant inv_freq by the positions) and the
    attention's products are not layers."""
    linears = llama["linears"]
    assert len(linears) == 15 and linears[0][0] == "model.layers.0.self_attn.q_proj" and linears[-1][0] == "lm_head"
    layers, listing = _list_linears(gptq_opt, llama["path"])
    expected = [
        (name, str(out), str(in_), f"block {name.split('.')[2]}", "")
        for name, out, in_ in linears
        if name.startswith("model.layers.")
    ]
    assert len(expected) == 14
    expected.append(("lm_head", "64", "32", "no block", " (output classifier)"))
    assert layers == expected, listing
    assert "15 linear layers: 14 in 2 blocks, 1 in no block" in listing
    assert 'loc("/model/layers.1/mlp/down_proj/MatMul")' in listing
    assert 'loc("/lm_head/MatMul")' in listing


def test_llama_float_module_matches_transformers(llama, gptq_run):
    """Another batch and length than the export's: both stay dynamic."""
    got = _gptq_run(gptq_run, llama["path"], llama, "float")
    assert got.shape == (3, 11, 64)
    assert relative(llama["expected"], got) <= 1e-5


def test_llama_quantized_on_tokens_keeps_lm_head_float(llama, gptq_opt, gptq_run):
    """Integer calibration samples with vocab= (the module has no
    gptq.model attribute to give it); the 14 block layers are quantized,
    lm_head stays float; the quantized module runs close to the float one."""
    output = llama["dir"] / "llama.q.mlir"
    report = _quantize(gptq_opt, llama["path"], output, "vocab=64")
    assert report["entry"] == "torch_jit"
    assert report["config"]["bits"] == 4
    blocks = [linear for linear in llama["linears"] if linear[0] != "lm_head"]
    assert [(layer["name"], layer["out"], layer["in"]) for layer in report["layers"]] == blocks
    assert {(layer["method"], layer["samples"]) for layer in report["layers"]} == {("gptq", 16)}
    text = output.read_text()
    assert text.count("gptq.dequantize") == 14
    # Float weights stored in x out as 32 x 64: the float module's gate_proj
    # and up_proj of each block and lm_head; the quantized one's lm_head alone.
    float_constant = re.compile(r"arith\.constant dense<[^>]*> : tensor<32x64xf32>")
    assert len(float_constant.findall(llama["path"].read_text())) == 5
    assert len(float_constant.findall(text)) == 1
    got = _gptq_run(gptq_run, output, llama, "quantized")
    float_ = _gptq_run(gptq_run, llama["path"], llama, "float")
    assert got.shape == (3, 11, 64)
    assert 1e-4 < relative(float_, got) < 0.5
