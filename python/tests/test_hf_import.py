"""import-hf: a Hugging Face Llama checkpoint (stories260K converted by
hf_convert.py) imports to the same module as import-llama2c, in every
dtype and in shards; bad checkpoints fail with one error naming what is
wrong, and no output."""

import copy
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from gptq_mlir.cli.commands import main
from gptq_mlir.importers import hf, llama2c
from gptq_mlir.runtime.model import Model
from hf_convert import hf_config, hf_tensors, write_hf_checkpoint


@pytest.fixture(scope="module")
def stories(checkpoint_path):
    return llama2c.read_checkpoint(checkpoint_path)


@pytest.fixture(scope="module")
def hf_folder(tmp_path_factory, stories) -> Path:
    return write_hf_checkpoint(stories, tmp_path_factory.mktemp("hf") / "stories260K")


def _linear_layers(path: Path) -> list:
    """The names of the weight constants of a module's @forward, in order."""
    text = path.read_text()
    return re.findall(r'dense_resource<([^>]+)> : [^ ]+ loc', text[: text.index("func.func @prefill")])


def test_logits_equal_the_llama2c_import(tmp_path, hf_folder, checkpoint_path, stories_mlir, gptq_run, capsys):
    """The same weights in the same order, read in place from the
    checkpoint (q and k rows in Hugging Face's order, rotated as halves),
    rotary angles computed in the module (llama2.c's module reads its
    stored tables): equal logits, and a module whose size does not depend
    on the weights. --embed-weights writes them in the module instead, with
    the same logits."""
    output = tmp_path / "hf.mlir"
    assert main(["import-hf", str(hf_folder), "-o", str(output)]) == 0
    assert f"reading its weights from {hf_folder / 'model.safetensors'}" in capsys.readouterr().err
    tables = ["freq_cis_real", "freq_cis_imag"]
    text = output.read_text()
    forward = text[: text.index("func.func @prefill")]
    names = re.findall(r'dense_resource<([^>]+)> : [^ ]+ loc\("([^"]+)"\)', forward)
    assert [ours for _, ours in names] == [name for name in _linear_layers(stories_mlir) if name not in tables]
    assert names[1] == ("model.layers.0.input_layernorm.weight", "layers.0.attention_norm")
    assert "freq_cis" not in text and "dialect_resources" not in text
    # Three entries (forward, prefill, decode) of text, no weights.
    assert len(text) < 400_000 < (hf_folder / "model.safetensors").stat().st_size
    first = text.splitlines()[0]
    assert f'gptq.parameters = "{os.path.relpath(hf_folder / "model.safetensors", tmp_path)}"' in first
    assert 'rotary = "halves"' in first
    assert '"layers.0.attention.wq" = "model.layers.0.self_attn.q_proj.weight"' in first
    assert '"tok_embeddings" = "F32"' in first
    embedded = tmp_path / "embedded.mlir"
    assert main(["import-hf", str(hf_folder), "-o", str(embedded), "--embed-weights"]) == 0
    assert "gptq.parameters" not in embedded.read_text().splitlines()[0]
    tokens = np.random.default_rng(0).integers(0, 512, size=(2, 20)).astype(np.int32)
    ours, theirs = Model(output).logits(tokens), Model(stories_mlir).logits(tokens)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5 * np.abs(theirs).max())
    np.testing.assert_array_equal(Model(embedded).logits(tokens), ours)


def test_the_rotary_permutation(stories):
    """Hugging Face's q and k rows are llama2.c's permuted per head (the
    module rotates them as halves); a mistaken permutation (e.g. the
    inverse) would not be this one."""
    cfg = stories.config
    tensors = hf_tensors(stories)
    wq = tensors["model.layers.0.self_attn.q_proj.weight"]
    assert not np.array_equal(wq, stories.weights["layers.0.attention.wq"])
    rows = hf.hf_rows(cfg.n_heads, cfg.head_size)
    # Head 0, converted row 1 is llama2.c's row 2 (the first of pair 1).
    assert list(rows[:4]) == [0, 2, 4, 6] and rows[cfg.head_size // 2] == 1
    assert not np.array_equal(np.argsort(rows), rows)


@pytest.mark.parametrize("dtype, shards", [("F32", 3), ("F16", 1), ("BF16", 2)])
def test_dtypes_and_shards(tmp_path, stories, dtype, shards):
    folder = write_hf_checkpoint(stories, tmp_path / "ckpt", dtype=dtype, shards=shards)
    assert (folder / "model.safetensors.index.json").exists() == (shards > 1)
    ckpt = hf.read_checkpoint(folder)
    assert set(ckpt.dtypes.values()) == {dtype}
    for name, array in stories.weights.items():
        if name.startswith("freq_cis_"):
            continue
        rows = hf.rotary_rows(stories.config, name)
        expected = array if rows is None else array[rows]
        if dtype == "F16":
            expected = expected.astype(np.float16).astype(np.float32)
        elif dtype == "BF16":
            import torch

            expected = torch.from_numpy(np.ascontiguousarray(expected)).to(torch.bfloat16).to(torch.float32).numpy()
        assert ckpt.weights[name].dtype == np.float32
        np.testing.assert_array_equal(ckpt.weights[name], expected, err_msg=name)


def test_untied_lm_head_and_config_fields(tmp_path):
    """An untied classifier is read as lm_head.weight; rms_norm_eps and
    rope_theta reach the module."""
    cfg = llama2c.Llama2cConfig(16, 40, 1, 4, 2, 32, 8, shared_classifier=False)
    rng = np.random.default_rng(1)
    weights = {name: rng.standard_normal(shape).astype(np.float32)
               for name, shape in llama2c.weight_layout(cfg, 1)}
    ckpt = llama2c.Llama2cCheckpoint(cfg, weights, 1)
    config = hf_config(ckpt)
    config.update(rms_norm_eps=1e-6, rope_theta=500000.0)
    folder = write_hf_checkpoint(ckpt, tmp_path / "ckpt", config=config)
    read = hf.read_checkpoint(folder)
    assert read.names["output"] == "lm_head.weight"
    np.testing.assert_array_equal(read.weights["output"], weights["output"])
    np.testing.assert_array_equal(read.weights["layers.0.attention.wk"],
                                  weights["layers.0.attention.wk"][hf.rotary_rows(cfg, "layers.0.attention.wk")])
    # The rotary frequencies 1 / 500000 ** (2i / 4) of the two pairs of a head.
    frequencies = np.array([1.0, 500000.0 ** -0.5], dtype=np.float32)
    np.testing.assert_allclose(read.architecture.frequencies(cfg.head_size), frequencies, rtol=1e-7)
    assert "freq_cis_real" not in read.weights
    output = tmp_path / "m.mlir"
    assert main(["import-hf", str(folder), "-o", str(output), "--external-weights"]) == 0
    text = output.read_text()
    assert "0x358637BD" in text  # 1e-6 as f32, the norms' epsilon
    assert f'dense<"0x{read.architecture.frequencies(cfg.head_size).astype("<f4").tobytes().hex().upper()}">' in text
    assert "dense_resource<output>" in text and (tmp_path / "m.weights.npz").exists()


def _bad_config(key, value):
    def change(config, tensors):
        config[key] = value
    return change


def _drop(name):
    def change(config, tensors):
        del tensors[name]
    return change


def _retype(name, dtype):
    def change(config, tensors):
        tensors[name] = tensors[name].astype(dtype)
    return change


def _reshape(name):
    def change(config, tensors):
        tensors[name] = tensors[name][:-1]
    return change


def _add(name, scale=1.0):
    def change(config, tensors):
        tensors[name] = tensors["model.embed_tokens.weight"] * np.float32(scale)
    return change


@pytest.mark.parametrize(
    "change, fragment",
    [
        (_drop("model.layers.2.mlp.up_proj.weight"), "missing tensor model.layers.2.mlp.up_proj.weight"),
        (_retype("model.norm.weight", np.int32), "tensor model.norm.weight has dtype I32"),
        (_reshape("model.layers.0.self_attn.k_proj.weight"),
         "tensor model.layers.0.self_attn.k_proj.weight has shape [31, 64], expected [32, 64]"),
        (_add("lm_head.weight", 0.5),
         "tensor lm_head.weight differs from model.embed_tokens.weight, but config.json has tie_word_embeddings = true"),
        (_add("model.layers.0.self_attn.q_proj.bias"), "unexpected tensor model.layers.0.self_attn.q_proj.bias"),
        (_bad_config("tie_word_embeddings", False), "missing tensor lm_head.weight"),
        (_bad_config("architectures", ["GPT2LMHeadModel"]), "architectures is ['GPT2LMHeadModel'], expected one of"),
        # An object in the list was looked up in a dict (TypeError; found by fuzz_hf_config.py).
        (_bad_config("architectures", [{"a": {}}]), "architectures is [{'a': {}}], expected one of"),
        (_bad_config("model_type", "mistral"), 'model_type is "mistral", expected "llama"'),
        (_bad_config("rope_scaling", {"rope_type": "yarn", "factor": 2.0}),
         "unsupported rope_scaling.rope_type = 'yarn' (supported: linear, dynamic, llama3)"),
        (_bad_config("rope_scaling", {"rope_type": "linear"}), "field rope_scaling.factor is null"),
        (_bad_config("head_dim", 7), "head size 7 is odd"),
        (_bad_config("attention_bias", True), "unsupported attention_bias = true"),
        (_bad_config("hidden_act", "gelu"), 'unsupported hidden_act = "gelu"'),
        (_bad_config("num_key_value_heads", 3), "n_heads 8 is not a multiple of n_kv_heads 3"),
    ],
)
def test_bad_checkpoints(tmp_path, stories, capsys, change, fragment):
    config, tensors = hf_config(stories), hf_tensors(stories)
    change(config, tensors)
    folder = write_hf_checkpoint(stories, tmp_path / "ckpt", config=config, tensors=tensors)
    output = tmp_path / "out" / "model.mlir"
    output.parent.mkdir()
    assert main(["import-hf", str(folder), "-o", str(output), "--external-weights"]) == 1
    message = capsys.readouterr().err
    assert message.startswith("gptq_mlir: error: ") and message.count("\n") == 1, message
    assert fragment in message, message
    assert list(output.parent.iterdir()) == []


def test_bad_shards(tmp_path, stories, capsys):
    folder = write_hf_checkpoint(stories, tmp_path / "ckpt", shards=2)
    index = folder / "model.safetensors.index.json"
    content = json.loads(index.read_text())
    original = copy.deepcopy(content)
    content["weight_map"]["model.norm.weight"] = "model-00003-of-00002.safetensors"
    index.write_text(json.dumps(content))
    output = tmp_path / "model.mlir"
    assert main(["import-hf", str(folder), "-o", str(output)]) == 1
    assert "model-00003-of-00002.safetensors" in capsys.readouterr().err
    other = next(name for name, file in original["weight_map"].items() if file != original["weight_map"]["model.norm.weight"])
    original["weight_map"]["model.norm.weight"] = original["weight_map"][other]
    index.write_text(json.dumps(original))
    assert main(["import-hf", str(folder), "-o", str(output)]) == 1
    assert "missing tensor model.norm.weight (the index puts it there)" in capsys.readouterr().err
    assert not output.exists()
