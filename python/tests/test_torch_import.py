"""The PyTorch rebuild of the model and the torch-mlir import path.

The module itself is checked against the oracle everywhere; the torch-mlir
import needs ``torch-mlir`` and ``onnx`` (docs/torch-mlir.md) and skips
without them.
"""

import subprocess

import numpy as np
import pytest

import oracle
from conftest import synthetic_checkpoint, write_checkpoint
from gptq_mlir.importers import emitter, llama2c
from gptq_mlir.importers.torch_model import Llama2c
from gptq_mlir.runtime.model import Model, read_model_attributes


@pytest.mark.parametrize("kwargs", [{}, {"n_kv_heads": 4, "shared_classifier": False}])
def test_module_matches_oracle(kwargs):
    import torch

    ckpt = synthetic_checkpoint(**kwargs)
    tokens = np.random.default_rng(4).integers(0, ckpt.config.vocab_size, size=(2, 9)).astype(np.int32)
    with torch.no_grad():
        got = Llama2c.from_checkpoint(ckpt)(torch.from_numpy(tokens)).numpy()
    np.testing.assert_allclose(got, oracle.forward(ckpt, tokens), rtol=1e-5, atol=1e-5)


def test_stories260k_module_matches_oracle(checkpoint_path):
    import torch

    ckpt = llama2c.read_checkpoint(checkpoint_path)
    tokens = np.array([[1, 403, 407, 261, 378, 432]], dtype=np.int32)
    with torch.no_grad():
        got = Llama2c.from_checkpoint(ckpt)(torch.from_numpy(tokens)).numpy()
    np.testing.assert_allclose(got, oracle.forward(ckpt, tokens), rtol=1e-5, atol=1e-4)


@pytest.fixture(scope="module")
def torch_mlir_module(tmp_path_factory):
    pytest.importorskip("onnx", reason="import-torch needs onnx (docs/torch-mlir.md)")
    pytest.importorskip("torch_mlir", reason="import-torch needs torch-mlir (docs/torch-mlir.md)")
    from gptq_mlir.cli.commands import main

    directory = tmp_path_factory.mktemp("torch")
    ckpt = synthetic_checkpoint(seed=5)
    source = write_checkpoint(directory / "model.bin", ckpt, 1)
    output = directory / "model.mlir"
    assert main(["import-torch", str(source), "-o", str(output)]) == 0
    return ckpt, source, output


def test_import_torch_parses_with_llvm22(torch_mlir_module, mlir_opt, gptq_run):
    ckpt, _, output = torch_mlir_module
    result = subprocess.run([mlir_opt, str(output), "-o", "/dev/null"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    text = output.read_text()
    # Printed with torch-mlir's locations: the argument named after the
    # ONNX input, the layers after their nodes.
    assert 'func.func @forward(%arg0: tensor<?x?xi32> loc("tokens"))' in text
    assert 'loc("/layers.0/attention/wq/MatMul")' in text
    assert read_model_attributes(output)["vocab_size"] == ckpt.config.vocab_size


def test_import_torch_logits_match_llama2c_import(torch_mlir_module, gptq_run, tmp_path):
    ckpt, source, output = torch_mlir_module
    direct = tmp_path / "direct.mlir"
    emitter.write_module(llama2c.read_checkpoint(source), direct)
    tokens = np.random.default_rng(6).integers(0, ckpt.config.vocab_size, size=(2, 7)).astype(np.int32)
    want = Model(direct).logits(tokens)
    got = Model(output).logits(tokens)
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()
