"""export-gptq and import-gptq: a model that gptq-opt rewrote, exported to
the GPTQ checkpoint layout, read back by an independent reader
(gptq_reader.py) and by import-gptq; bad checkpoints and models the format
cannot express fail with one error and no output."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from gptq_mlir.checkpoints import gptq
from gptq_mlir.cli.commands import main
from gptq_mlir.data import corpus
from gptq_mlir.data.tokenizer import load_tokenizer
from gptq_mlir.importers import hf, emitter, llama2c
from gptq_mlir.runtime import runner
from gptq_mlir.runtime.model import Model, perplexity
from gptq_reader import dequantize, read_metadata, read_safetensors, zero_points

#: Relative error of rounding a float32 scale to float16 (10 stored bits):
#: a weight dequantized with the float16 scale differs from the float32 one
#: by at most this much of itself, plus float32 rounding.
FP16_SCALE_ROUNDING = 2.0**-11 + 2.0**-20


@pytest.fixture(scope="module")
def calibration(tmp_path_factory, tokenizer_path, text_path) -> Path:
    stream = corpus.load_corpus(load_tokenizer(tokenizer_path), text_path, 0.0, 0.8)
    path = tmp_path_factory.mktemp("calib") / "calib.npy"
    np.save(path, corpus.calibration_windows(stream, 4, 64, 0))
    return path


def _quantize(module: Path, calibration: Path, output: Path, options: str) -> Path:
    runner.run_opt(module, output, [f"--gptq-quantize-model=calibration={calibration} {options}"])
    return output


def _hf_rows(weight: np.ndarray, heads: int) -> np.ndarray:
    """Hugging Face's q/k conversion, as its script writes it:
    w.view(heads, head_dim // 2, 2, dim).transpose(1, 2).reshape(heads * head_dim, dim)."""
    out, dim = weight.shape
    return weight.reshape(heads, out // heads // 2, 2, dim).transpose(0, 2, 1, 3).reshape(out, dim)


HF_PREFIX = {
    "attention.wq": "self_attn.q_proj", "attention.wk": "self_attn.k_proj",
    "attention.wv": "self_attn.v_proj", "attention.wo": "self_attn.o_proj",
}


@pytest.mark.parametrize(
    "options, quantization",
    [
        ("bits=2 group-size=32 sym=true", {"bits": 2, "group_size": 32, "desc_act": False, "sym": True}),
        ("bits=3 act-order=true", {"bits": 3, "group_size": -1, "desc_act": False, "sym": False}),
        ("bits=4 group-size=16 act-order=true", {"bits": 4, "group_size": 16, "desc_act": True, "sym": False}),
        ("bits=8 sym=true", {"bits": 8, "group_size": -1, "desc_act": False, "sym": True}),
    ],
)
def test_independent_reader_agrees(tmp_path, stories_mlir, calibration, options, quantization):
    """Every exported layer, dequantized by the independent reader with its
    float16 scales, equals our dequantized weight (format=float) within the
    float16 rounding of the scale; the float tensors are the model's."""
    layers = r"include=^layers\.[01]\.attention"
    packed = _quantize(stories_mlir, calibration, tmp_path / "q.mlir", f"{options} {layers}")
    floats = _quantize(stories_mlir, calibration, tmp_path / "f.mlir", f"{options} {layers} format=float")
    out = tmp_path / "ckpt"
    assert main(["export-gptq", str(packed), "--out", str(out)]) == 0
    config = json.loads((out / "config.json").read_text())
    expected = dict(quantization, quant_method="gptq", checkpoint_format="gptq")
    assert {key: config["quantization_config"][key] for key in expected} == expected
    assert json.loads((out / "quantize_config.json").read_text()) == config["quantization_config"]
    assert config["architectures"] == ["LlamaForCausalLM"] and config["tie_word_embeddings"] is True

    tensors = read_safetensors(out / "model.safetensors")
    ours = gptq.read_rewritten_model(floats).weights
    bits = quantization["bits"]
    checked = 0
    for layer in range(2):
        for name, prefix in HF_PREFIX.items():
            weight = ours[f"layers.{layer}.{name}.dequantized"].astype(np.float64)
            if name == "attention.wq":
                weight = _hf_rows(weight, 8)
            elif name == "attention.wk":
                weight = _hf_rows(weight, 4)
            theirs = dequantize(tensors, f"model.layers.{layer}.{prefix}", bits)
            assert theirs.shape == weight.shape
            assert np.all(np.abs(theirs - weight) <= FP16_SCALE_ROUNDING * np.abs(weight)), (layer, name)
            assert tensors[f"model.layers.{layer}.{prefix}.scales"].dtype == np.float16
            checked += 1
    assert checked == 8
    ckpt = llama2c.read_checkpoint(Path(__file__).parents[2] / "data/stories260K/stories260K.bin")
    np.testing.assert_array_equal(tensors["model.layers.1.mlp.down_proj.weight"], ckpt.weights["layers.1.feed_forward.w2"])
    np.testing.assert_array_equal(tensors["model.layers.2.self_attn.q_proj.weight"],
                                  _hf_rows(ckpt.weights["layers.2.attention.wq"], 8))
    # The tied classifier is stored too: a copy of the embeddings, in their dtype.
    assert config["tie_word_embeddings"] is True
    assert tensors["lm_head.weight"].dtype == tensors["model.embed_tokens.weight"].dtype
    np.testing.assert_array_equal(tensors["lm_head.weight"], tensors["model.embed_tokens.weight"])
    assert not any(name.startswith("freq_cis") for name in tensors)
    assert read_metadata(out / "model.safetensors") == {"format": "pt"}


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory, stories_mlir, calibration):
    """stories260K, every attention layer quantized to 4 bits in groups of
    32 with act-order, exported and imported back."""
    folder = tmp_path_factory.mktemp("round_trip")
    quantized = _quantize(stories_mlir, calibration, folder / "q4.mlir",
                          "bits=4 group-size=32 act-order=true include=attention")
    assert main(["export-gptq", str(quantized), "--out", str(folder / "ckpt")]) == 0
    assert main(["import-gptq", str(folder / "ckpt"), "-o", str(folder / "imported.mlir")]) == 0
    return quantized, folder / "ckpt", folder / "imported.mlir"


def test_round_trip_perplexity(round_trip, tokenizer_path, text_path):
    """The re-imported model has the rewrite's ops and the same perplexity
    as the exported one, within the float16 rounding of the scales."""
    quantized, _, imported = round_trip
    text = imported.read_text()
    # 20 layers in each of the three entries; act-order's columns stored
    # sorted by group, each layer's activation read through gptq.permute,
    # by gptq-opt's rewrite and by import-gptq alike.
    assert text.count("gptq.unpack") == 60 and text.count("gptq.dequantize") == 60
    assert text.count("gptq.permute") == 60 and quantized.read_text().count("gptq.permute") == 60
    stream = corpus.load_corpus(load_tokenizer(tokenizer_path), text_path, 0.8, 1.0)
    windows = corpus.consecutive_windows(stream, 128)[:8]
    before = perplexity(Model(quantized), windows, progress=None)["perplexity"]
    after = perplexity(Model(imported), windows, progress=None)["perplexity"]
    assert before != after  # the scales were rounded
    assert abs(after - before) / before < 1e-3, (before, after)


def test_round_trip_layers_and_reexport(round_trip, tmp_path):
    """import-gptq gives the rewrite's codes, zeros and g_idx exactly and its
    scales rounded to float16, the rows of q and k in Hugging Face's order
    (the llama2.c module's permuted; the imported module rotates halves);
    exporting it again gives the same file."""
    quantized, ckpt, imported = round_trip
    before = gptq.read_rewritten_model(quantized)
    after = gptq.read_rewritten_model(imported)
    assert sorted(before.layers) == sorted(after.layers)
    assert 'rotary = "halves"' in imported.read_text().splitlines()[0]
    cfg = llama2c.read_checkpoint(Path(__file__).parents[2] / "data/stories260K/stories260K.bin").config
    permuted = 0
    for name, layer in before.layers.items():
        again = after.layers[name]
        rows = hf.rotary_rows(cfg, name)
        rows = np.arange(layer.codes.shape[0]) if rows is None else rows
        permuted += not np.array_equal(rows, np.arange(rows.size))
        np.testing.assert_array_equal(layer.codes[rows], again.codes, err_msg=name)
        np.testing.assert_array_equal(layer.zeros[rows], again.zeros, err_msg=name)
        np.testing.assert_array_equal(layer.g_idx, again.g_idx, err_msg=name)
        np.testing.assert_array_equal(layer.scales[rows].astype(np.float16).astype(np.float32), again.scales,
                                      err_msg=name)
    assert permuted == 10  # wq and wk of five blocks
    assert main(["export-gptq", str(imported), "--out", str(tmp_path / "again")]) == 0
    first, second = read_safetensors(ckpt / "model.safetensors"), read_safetensors(tmp_path / "again/model.safetensors")
    assert sorted(first) == sorted(second)
    for name in first:
        np.testing.assert_array_equal(first[name], second[name], err_msg=name)


def test_pack_stream_three_bits():
    """32 three-bit codes fill three words; codes 10 and 21 cross words."""
    codes = np.arange(32, dtype=np.uint8)[None] % 8
    words = gptq.pack_stream(codes, 3)
    assert words.shape == (1, 3)
    value = sum(int(c) << (3 * j) for j, c in enumerate(codes[0]))
    assert [int(w) for w in words[0]] == [(value >> (32 * i)) & 0xFFFFFFFF for i in range(3)]
    np.testing.assert_array_equal(gptq.unpack_stream(words, 32, 3), codes)


def _error(capsys, *fragments):
    message = capsys.readouterr().err
    assert message.startswith("gptq_mlir: error: ") and message.count("\n") == 1, message
    for fragment in fragments:
        assert fragment in message, message


def test_export_refuses_what_the_format_cannot_store(tmp_path, stories_mlir, round_trip, capsys):
    out = tmp_path / "out"
    assert main(["export-gptq", str(stories_mlir), "--out", str(out)]) == 1
    _error(capsys, "no quantized layer")
    w1 = tmp_path / "w1.mlir"
    runner.run_opt(stories_mlir, w1, [r"--gptq-quantize-model=method=rtn bits=4 include=^layers\.0\.feed_forward\.w1$"])
    assert main(["export-gptq", str(w1), "--out", str(out)]) == 1
    _error(capsys, "layer layers.0.feed_forward.w1: out features 172 x 4 bits is not a multiple of 32")
    assert not out.exists()

    # Mixed bit widths and a zero point of 0, made by changing the imported
    # checkpoint's layers and emitting it again.
    checkpoint = gptq.read_gptq_checkpoint(round_trip[1])
    layer = checkpoint.quantized["layers.1.attention.wv"]
    codes = gptq.unpack_stream(layer.qweight, layer.g_idx.size, 4)
    layer.qweight = gptq.pack_stream(codes, 8).view(np.int32)
    layer.bits = 8
    emitter.write_module(checkpoint, tmp_path / "mixed.mlir")
    out.mkdir()
    (out / "keep.txt").write_text("old")
    assert main(["export-gptq", str(tmp_path / "mixed.mlir"), "--out", str(out)]) == 1
    _error(capsys, "mixed bit widths", "layers.1.attention.wv")
    layer.qweight = gptq.pack_stream(codes, 4).view(np.int32)
    layer.bits = 4
    layer.zeros[3, 1] = 0
    emitter.write_module(checkpoint, tmp_path / "zero.mlir")
    assert main(["export-gptq", str(tmp_path / "zero.mlir"), "--out", str(out)]) == 1
    _error(capsys, "layer layers.1.attention.wv: zero point 0.0 (row 3, group 1) is not an integer in [1, 15], "
           "which the gptq format (zero - 1 in 4 bits) can store; --format gptq_v2 stores zero points of 0")
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    # A zero point no format stores: gptq_v2 gives no hint, and v1 none either.
    layer.zeros[5, 0] = 16
    emitter.write_module(checkpoint, tmp_path / "sixteen.mlir")
    for checkpoint_format in ("gptq", "gptq_v2"):
        command = ["export-gptq", str(tmp_path / "sixteen.mlir"), "--out", str(out), "--format", checkpoint_format]
        assert main(command) == 1
        low = 1 if checkpoint_format == "gptq" else 0
        message = capsys.readouterr().err
        assert f"zero point 16.0 (row 5, group 0) is not an integer in [{low}, 15]" in message, message
        assert "--format gptq_v2" not in message and message.count("\n") == 1, message
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_gptq_v2(tmp_path, round_trip, capsys):
    """--format gptq_v2 stores the zero points themselves (v1's plus one,
    field by field) and says so in both configs; import-gptq reads it to
    the same layers as the v1 checkpoint; and it stores a zero point of 0,
    which v1 cannot."""
    quantized, v1, imported = round_trip
    v2 = tmp_path / "v2"
    assert main(["export-gptq", str(quantized), "--out", str(v2), "--format", "gptq_v2"]) == 0
    assert "(gptq_v2, 4 bits, group_size 32, desc_act true" in capsys.readouterr().err
    config = json.loads((v2 / "config.json").read_text())
    assert config["quantization_config"]["checkpoint_format"] == "gptq_v2"
    assert json.loads((v2 / "quantize_config.json").read_text()) == config["quantization_config"]
    first, second = read_safetensors(v1 / "model.safetensors"), read_safetensors(v2 / "model.safetensors")
    assert sorted(first) == sorted(second)
    for name in first:
        if name.endswith(".qzeros"):
            prefix = name[: -len(".qzeros")]
            np.testing.assert_array_equal(zero_points(second, prefix, 4, "gptq_v2"), zero_points(first, prefix, 4))
            np.testing.assert_array_equal(dequantize(second, prefix, 4, "gptq_v2"), dequantize(first, prefix, 4))
            assert not np.array_equal(first[name], second[name])
        else:
            np.testing.assert_array_equal(first[name], second[name], err_msg=name)
    again = tmp_path / "v2.mlir"
    assert main(["import-gptq", str(v2), "-o", str(again)]) == 0
    assert "4 bits, gptq_v2)" in capsys.readouterr().err
    # The module records config.json, checkpoint_format included, on its first line.
    assert again.read_text().splitlines()[1:] == imported.read_text().splitlines()[1:]

    checkpoint = gptq.read_gptq_checkpoint(v1)
    checkpoint.quantized["layers.1.attention.wv"].zeros[3, 1] = 0
    emitter.write_module(checkpoint, tmp_path / "zero.mlir")
    zero = tmp_path / "zero"
    assert main(["export-gptq", str(tmp_path / "zero.mlir"), "--out", str(zero), "--format", "gptq_v2"]) == 0
    assert main(["import-gptq", str(zero), "-o", str(tmp_path / "zero-again.mlir")]) == 0
    layer = gptq.read_rewritten_model(tmp_path / "zero-again.mlir").layers["layers.1.attention.wv"]
    assert layer.zeros[3, 1] == 0
    np.testing.assert_array_equal(layer.zeros, checkpoint.quantized["layers.1.attention.wv"].zeros)


def test_autogptq_repository_layouts(tmp_path, round_trip):
    """An AutoGPTQ repository: only quantize_config.json says how it is
    quantized, and the tensors are in gptq_model-4bit-32g.safetensors, named
    by model_file_base_name or the only *.safetensors file. It imports to
    the module of the checkpoint export-gptq wrote (but the config it
    records, which has no quantization_config). The modules are compared
    with their weights embedded: in place they name different files."""
    _, ckpt, _ = round_trip
    imported = tmp_path / "imported.mlir"
    assert main(["import-gptq", str(ckpt), "-o", str(imported), "--embed-weights"]) == 0
    folder = tmp_path / "autogptq"
    folder.mkdir()
    config = json.loads((ckpt / "config.json").read_text())
    quantization = config.pop("quantization_config")
    (folder / "config.json").write_text(json.dumps(config))
    shutil.copy(ckpt / "model.safetensors", folder / "gptq_model-4bit-32g.safetensors")
    for named in (False, True):
        content = dict(quantization, model_file_base_name="gptq_model-4bit-32g" if named else None)
        (folder / "quantize_config.json").write_text(json.dumps(content))
        output = tmp_path / f"named-{named}.mlir"
        assert main(["import-gptq", str(folder), "-o", str(output), "--embed-weights"]) == 0
        assert output.read_text().splitlines()[1:] == imported.read_text().splitlines()[1:]
    # Named, it is chosen among others.
    shutil.copy(ckpt / "model.safetensors", folder / "model.safetensors")
    _edit_tensors(folder, lambda t: t.pop(f"{Q}.scales"))
    assert main(["import-gptq", str(folder), "-o", str(tmp_path / "chosen.mlir"), "--embed-weights"]) == 0
    assert (tmp_path / "chosen.mlir").read_text() == (tmp_path / "named-True.mlir").read_text()


def test_tied_classifier_copy(tmp_path, round_trip):
    """The lm_head.weight that export-gptq stores for a tied model changes
    nothing: without it, the checkpoint imports to the same module (both
    with their weights embedded)."""
    _, ckpt, _ = round_trip
    imported = tmp_path / "imported.mlir"
    assert main(["import-gptq", str(ckpt), "-o", str(imported), "--embed-weights"]) == 0
    folder = tmp_path / "ckpt"
    shutil.copytree(ckpt, folder)
    _edit_tensors(folder, lambda t: t.pop("lm_head.weight"))
    assert main(["import-gptq", str(folder), "-o", str(tmp_path / "without.mlir"), "--embed-weights"]) == 0
    assert (tmp_path / "without.mlir").read_text() == imported.read_text()


def test_transformers_reads_the_safetensors_file(round_trip):
    """transformers' loader needs the file's {"format": "pt"} metadata
    (without it: AttributeError: 'NoneType' object has no attribute
    'get'); it reads the tensors the independent reader reads."""
    pytest.importorskip("transformers", reason="transformers is not installed (scripts/test-deps.sh)")
    from safetensors import safe_open
    from transformers.modeling_utils import load_state_dict

    path = round_trip[1] / "model.safetensors"
    with safe_open(str(path), framework="pt") as handle:
        assert handle.metadata() == {"format": "pt"}
    loaded, expected = load_state_dict(str(path)), read_safetensors(path)
    assert sorted(loaded) == sorted(expected)
    for name, tensor in loaded.items():
        np.testing.assert_array_equal(tensor.numpy(), expected[name], err_msg=name)


def _edit_tensors(folder: Path, change) -> None:
    from safetensors.numpy import load_file, save_file

    tensors = dict(load_file(str(folder / "model.safetensors")))
    change(tensors)
    save_file(tensors, str(folder / "model.safetensors"))


def _edit_config(folder: Path, change, name: str = "config.json") -> None:
    config = json.loads((folder / name).read_text())
    change(config)
    (folder / name).write_text(json.dumps(config))


def _edit_quantize_config(folder: Path, change) -> None:
    _edit_config(folder, change, "quantize_config.json")


def _without_quantization_config(folder: Path) -> None:
    _edit_config(folder, lambda c: c.pop("quantization_config"))
    (folder / "quantize_config.json").unlink()


def _add_file(folder: Path, name: str) -> None:
    shutil.copy(folder / "model.safetensors", folder / name)


def _change_lm_head(tensors) -> None:
    tensors["lm_head.weight"] = tensors["lm_head.weight"].copy()
    tensors["lm_head.weight"][3, 5] += 1e-3


Q = "model.layers.0.self_attn.q_proj"


@pytest.mark.parametrize(
    "edit, fragment",
    [
        (lambda f: _edit_tensors(f, lambda t: t.pop(f"{Q}.scales")), f"missing tensor {Q}.scales"),
        (lambda f: _edit_tensors(f, lambda t: t.update({f"{Q}.qzeros": t[f"{Q}.qzeros"].astype(np.float32)})),
         f"tensor {Q}.qzeros has dtype F32, expected I32"),
        (lambda f: _edit_tensors(f, lambda t: t.update({f"{Q}.qweight": t[f"{Q}.qweight"][:-1]})),
         f"tensor {Q}.qweight has shape [7, 64], expected [8, 64]"),
        (lambda f: _edit_tensors(f, lambda t: t.pop("model.layers.3.mlp.up_proj.weight")),
         "missing tensor model.layers.3.mlp.up_proj.weight"),
        (lambda f: _edit_tensors(f, lambda t: t.update({f"{Q}.g_idx": t[f"{Q}.g_idx"] + 5})),
         f"tensor {Q}.g_idx has groups outside [0, 2)"),
        (lambda f: _edit_config(f, lambda c: c.update(architectures=["GPT2LMHeadModel"])),
         "architectures is ['GPT2LMHeadModel']"),
        (lambda f: _edit_config(f, lambda c: c["quantization_config"].update(checkpoint_format="marlin")),
         'unsupported quantization_config.checkpoint_format = "marlin", expected "gptq" or "gptq_v2"'),
        (lambda f: _edit_quantize_config(f, lambda c: c.update(checkpoint_format="gptq_v3")),
         'quantize_config.json: unsupported checkpoint_format = "gptq_v3"'),
        (lambda f: _edit_quantize_config(f, lambda c: c.update(is_marlin_format=True)),
         "quantize_config.json: unsupported is_marlin_format = true"),
        (lambda f: _edit_quantize_config(f, lambda c: c.update(checkpoint_format="gptq_v2")),
         "quantize_config.json: field checkpoint_format is \"gptq_v2\", but config.json's "
         "quantization_config.checkpoint_format is \"gptq\""),
        (lambda f: _edit_quantize_config(f, lambda c: c.update(group_size=128)),
         "quantize_config.json: field group_size is 128, but config.json's quantization_config.group_size is 32"),
        (lambda f: _edit_quantize_config(f, lambda c: c.update(model_file_base_name="gptq_model-4bit-32g")),
         'quantize_config.json: field model_file_base_name is "gptq_model-4bit-32g", but'),
        (lambda f: _edit_quantize_config(f, lambda c: c.update(model_file_base_name="../model")),
         'quantize_config.json: model_file_base_name = "../model", expected a file name'),
        (lambda f: _add_file(f, "gptq_model-4bit-32g.safetensors"),
         "several safetensors files (gptq_model-4bit-32g.safetensors, model.safetensors) and no "
         "model_file_base_name in quantize_config.json"),
        (lambda f: _edit_tensors(f, _change_lm_head),
         "model.safetensors: tensor lm_head.weight differs from model.embed_tokens.weight, but config.json has "
         "tie_word_embeddings = true"),
        (lambda f: _edit_config(f, lambda c: c.update(quantization_config=4)),
         "config.json: field quantization_config is not a JSON object"),
        (lambda f: _edit_config(f, lambda c: c["quantization_config"].update(bits=5)),
         "unsupported quantization_config.bits = 5"),
        (lambda f: _edit_config(f, lambda c: c["quantization_config"].update(quant_method="awq")),
         'unsupported quantization_config.quant_method = "awq"'),
        (_without_quantization_config, "missing field quantization_config, and no quantize_config.json"),
    ],
)
@pytest.mark.parametrize("mode", [[], ["--external-weights"]], ids=["in-place", "external"])
def test_import_gptq_bad_checkpoints(tmp_path, round_trip, capsys, edit, fragment, mode):
    """Read in place (the quantized layers' values checked as they are
    converted into the archive beside the module) or into an .npz, the same
    error and no output."""
    folder = tmp_path / "ckpt"
    shutil.copytree(round_trip[1], folder)
    edit(folder)
    output = tmp_path / "out" / "model.mlir"
    output.parent.mkdir()
    assert main(["import-gptq", str(folder), "-o", str(output), *mode]) == 1
    _error(capsys, fragment)
    assert list(output.parent.iterdir()) == []


def test_export_of_a_hugging_face_import(tmp_path, stories_mlir, checkpoint_path):
    """A model imported by import-hf keeps its Hugging Face config, names and
    dtypes (float16 here) in the export; bytecode exports as text does."""
    from hf_convert import hf_tensors, write_hf_checkpoint

    stories = llama2c.read_checkpoint(checkpoint_path)
    folder = write_hf_checkpoint(stories, tmp_path / "hf", dtype="F16")
    config = json.loads((folder / "config.json").read_text())
    config["bos_token_id"] = 7
    (folder / "config.json").write_text(json.dumps(config))
    assert main(["import-hf", str(folder), "-o", str(tmp_path / "hf.mlir")]) == 0
    bytecode = tmp_path / "q.mlirbc"
    runner.run_opt(tmp_path / "hf.mlir", bytecode,
                   [r"--gptq-quantize-model=method=rtn bits=4 include=^layers\.0\.attention\.w[qk]$", "--emit-bytecode"])
    assert bytecode.read_bytes().startswith(b"ML\xefR")
    assert main(["export-gptq", str(bytecode), "--out", str(tmp_path / "ckpt")]) == 0
    exported = json.loads((tmp_path / "ckpt/config.json").read_text())
    assert exported.pop("quantization_config")["bits"] == 4
    assert exported == config
    tensors = read_safetensors(tmp_path / "ckpt/model.safetensors")
    originals = hf_tensors(stories)
    # The tied classifier, stored as a copy of the embeddings.
    originals["lm_head.weight"] = originals["model.embed_tokens.weight"]
    assert {f"model.layers.0.self_attn.{p}_proj.{s}" for p in "qk" for s in ("qweight", "qzeros", "scales", "g_idx")} \
        <= set(tensors)
    for name, array in tensors.items():
        if name.endswith(".weight"):
            assert array.dtype == np.float16, name
            np.testing.assert_array_equal(array, originals[name].astype(np.float16), err_msg=name)
    assert len([n for n in tensors if n.endswith(".weight")]) == len(originals) - 2


def test_import_gptq_sharded(tmp_path, round_trip):
    """The same checkpoint split into shards named by an index imports to
    the same module (compared with the weights embedded) and, in place, to
    the same archive of quantized tensors beside the module."""
    from safetensors.numpy import load_file, save_file

    tensors = load_file(str(round_trip[1] / "model.safetensors"))
    folder = tmp_path / "sharded"
    folder.mkdir()
    shutil.copy(round_trip[1] / "config.json", folder)
    weight_map = {}
    for shard, names in enumerate([sorted(tensors)[0::2], sorted(tensors)[1::2]]):
        file_name = f"model-{shard + 1:05d}-of-00002.safetensors"
        save_file({name: tensors[name] for name in names}, str(folder / file_name))
        weight_map.update({name: file_name for name in names})
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    assert main(["import-gptq", str(folder), "-o", str(tmp_path / "sharded.mlir")]) == 0
    assert (tmp_path / "sharded.safetensors").read_bytes() == round_trip[2].with_suffix(".safetensors").read_bytes()
    assert '"sharded/model.safetensors.index.json"' in (tmp_path / "sharded.mlir").read_text()
    for source, output in ((folder, "sharded-embedded.mlir"), (round_trip[1], "embedded.mlir")):
        assert main(["import-gptq", str(source), "-o", str(tmp_path / output), "--embed-weights"]) == 0
    assert (tmp_path / "sharded-embedded.mlir").read_text() == (tmp_path / "embedded.mlir").read_text()


def test_quantized_classifier(tmp_path, stories_mlir):
    """classifier=true: the tied classifier's quantized copy is exported as
    lm_head (tie_word_embeddings false, lm_head true) and comes back as a
    quantized untied classifier, the embeddings float."""
    quantized = tmp_path / "q.mlir"
    runner.run_opt(stories_mlir, quantized, ["--gptq-quantize-model=method=rtn bits=4 classifier=true include=^output$"])
    assert main(["export-gptq", str(quantized), "--out", str(tmp_path / "ckpt")]) == 0
    config = json.loads((tmp_path / "ckpt/config.json").read_text())
    assert config["tie_word_embeddings"] is False and config["quantization_config"]["lm_head"] is True
    tensors = read_safetensors(tmp_path / "ckpt/model.safetensors")
    assert "lm_head.qweight" in tensors and "lm_head.weight" not in tensors
    assert "model.embed_tokens.weight" in tensors
    imported = tmp_path / "imported.mlir"
    assert main(["import-gptq", str(tmp_path / "ckpt"), "-o", str(imported)]) == 0
    before = gptq.read_rewritten_model(quantized).layers["output"]
    after = gptq.read_rewritten_model(imported).layers["output"]
    np.testing.assert_array_equal(before.codes, after.codes)
    np.testing.assert_array_equal(before.zeros, after.zeros)
