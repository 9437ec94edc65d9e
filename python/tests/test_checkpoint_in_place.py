"""import-hf without copies: the module reads the checkpoint's bfloat16
tensors in place, from its shards. It computes what the float32 copy
(--embed-weights) computes, gptq-opt quantizes it to the same codes, scales,
zeros and g_idx bit for bit (written to an archive beside its output, which
still reads the float tensors from the checkpoint), and its quantized form
exports to a GPTQ checkpoint that reads back. A checkpoint that changes after the import is
an error naming the file and tensor, with no output."""

import json
import re
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from gptq_mlir.checkpoints import gptq
from gptq_mlir.cli.commands import main
from gptq_mlir.errors import GPTQError
from gptq_mlir.files import inputs
from gptq_mlir.importers import llama2c
from gptq_mlir.runtime import runner
from gptq_mlir.runtime.model import Model
from hf_convert import write_hf_checkpoint

# The feed-forward layers of stories260K (hidden 172) have no GPTQ checkpoint form.
QUANTIZE = "bits=4 group-size=32 act-order=true calibration-batch=4 include=attention"


@pytest.fixture(scope="module")
def bf16_folder(tmp_path_factory, checkpoint_path) -> Path:
    stories = llama2c.read_checkpoint(checkpoint_path)
    return write_hf_checkpoint(stories, tmp_path_factory.mktemp("bf16") / "ckpt", dtype="BF16", shards=2)


@pytest.fixture(scope="module")
def imports(tmp_path_factory, bf16_folder):
    folder = tmp_path_factory.mktemp("imports")
    in_place, embedded = folder / "in_place.mlir", folder / "embedded.mlir"
    assert main(["import-hf", str(bf16_folder), "-o", str(in_place)]) == 0
    assert main(["import-hf", str(bf16_folder), "-o", str(embedded), "--embed-weights"]) == 0
    return in_place, embedded


QUANTIZED = ("qweight", "scales", "zeros", "g_idx", "perm")


def _quantized_layers(path: Path) -> dict:
    """The quantized layers' tensors of a rewritten module, as bytes: from
    the archive beside it, or from its own resources."""
    archive = path.with_suffix(".safetensors")
    if archive.exists():
        from safetensors.numpy import load_file

        return {k: v.tobytes() for k, v in load_file(str(archive)).items() if k.rsplit(".", 1)[-1] in QUANTIZED}
    resources = path.read_text().split("{-#", 1)[1]
    blobs = dict(re.findall(r'^\s+"?([\w.]+)"?: "0x([0-9a-fA-F]+)"', resources, re.M))
    # After the blob's alignment word.
    return {k: bytes.fromhex(v)[4:] for k, v in blobs.items() if k.rsplit(".", 1)[-1] in QUANTIZED}


def test_the_module_reads_the_shards(imports, bf16_folder, gptq_run):
    in_place, embedded = imports
    first = in_place.read_text().splitlines()[0]
    assert 'gptq.parameters = "' in first and "model.safetensors.index.json" in first
    text = in_place.read_text()
    assert "dialect_resources" not in text
    assert "dense_resource<model.layers.0.self_attn.q_proj.weight> : tensor<64x64xbf16>" in text
    assert text.count("arith.extf") > 40
    tokens = np.random.default_rng(0).integers(0, 512, size=(2, 16)).astype(np.int32)
    np.testing.assert_array_equal(Model(in_place).logits(tokens), Model(embedded).logits(tokens))


def test_quantized_bit_for_bit_as_the_float32_copy(tmp_path, imports, gptq_opt):
    in_place, embedded = imports
    calibration = tmp_path / "calib.npy"
    np.save(calibration, np.random.default_rng(1).integers(0, 512, size=(8, 32)).astype(np.int32))
    outputs = []
    for module in imports:
        out = tmp_path / f"{module.stem}.q.mlir"
        runner.run_opt(module, out, [f"--gptq-quantize-model=calibration={calibration} {QUANTIZE}"])
        outputs.append(out)
    ours, copy = map(_quantized_layers, outputs)
    # Act-order at 4 bits in groups of 32: the columns sorted by group, the
    # permutation a fifth tensor of each layer.
    assert len(ours) == 5 * 20 and ours == copy
    # The quantized weights are in the archive beside the output, the float
    # ones (the embedding, the norms) still the checkpoint's bfloat16.
    text = outputs[0].read_text()
    assert "dialect_resources" not in text and not outputs[1].with_suffix(".safetensors").exists()
    assert "dense_resource<model.embed_tokens.weight> : tensor<512x64xbf16>" in text
    assert re.search(r'gptq\.parameters = \["/[^"]*/model\.safetensors\.index\.json", "in_place\.q\.safetensors"\]', text)
    tokens = np.random.default_rng(2).integers(0, 512, size=(2, 16)).astype(np.int32)
    np.testing.assert_array_equal(Model(outputs[0]).logits(tokens), Model(outputs[1]).logits(tokens))

    # Its GPTQ checkpoint keeps the float tensors in bfloat16 and reads back.
    out = tmp_path / "gptq"
    assert main(["export-gptq", str(outputs[0]), "--out", str(out)]) == 0
    header = json.loads((out / "model.safetensors").read_bytes()[8:8 + struct.unpack(
        "<Q", (out / "model.safetensors").read_bytes()[:8])[0]])
    assert header["model.embed_tokens.weight"]["dtype"] == "BF16"
    assert header["model.layers.0.self_attn.q_proj.qweight"]["dtype"] == "I32"
    copy_out = tmp_path / "gptq-copy"
    assert main(["export-gptq", str(outputs[1]), "--out", str(copy_out)]) == 0
    assert (out / "model.safetensors").read_bytes() == (copy_out / "model.safetensors").read_bytes()
    # import-gptq reads the float tensors in place and converts the
    # quantized layers into imported.safetensors; the module runs as the
    # one with everything embedded does, to the bit, and exports again to
    # the same checkpoint.
    imported, embedded = tmp_path / "imported.mlir", tmp_path / "embedded.mlir"
    assert main(["import-gptq", str(out), "-o", str(imported)]) == 0
    assert main(["import-gptq", str(out), "-o", str(embedded), "--embed-weights"]) == 0
    text = imported.read_text()
    assert "dialect_resources" not in text
    assert re.search(r'gptq\.parameters = \["[^"]*gptq/model\.safetensors", "imported\.safetensors"\]', text)
    assert "dense_resource<model.embed_tokens.weight> : tensor<512x64xbf16>" in text
    archive = inputs.SafetensorsFile(tmp_path / "imported.safetensors")
    assert archive.tensors["layers.0.attention.wq.qweight"].dtype == "I32"
    assert archive.tensors["layers.0.attention.wq.qweight"].shape == (64, 8)
    # Act-order at 4 bits in groups of 32: each layer's columns sorted by
    # group, with the permutation as a fifth tensor (int64 [in]).
    assert len(archive.tensors) == 5 * 20
    assert archive.tensors["layers.0.attention.wq.perm"].dtype == "I64"
    read = gptq.read_rewritten_model(imported)
    assert len(read.layers) == 20
    np.testing.assert_array_equal(Model(imported).logits(tokens), Model(embedded).logits(tokens))
    for module in (imported, embedded):
        again = tmp_path / f"again-{module.stem}"
        assert main(["export-gptq", str(module), "--out", str(again)]) == 0
        assert (again / "model.safetensors").read_bytes() == (out / "model.safetensors").read_bytes()


def test_a_changed_checkpoint_is_an_error(tmp_path, bf16_folder, gptq_run, capsys):
    """The module records nothing of the tensors but their names, dtypes and
    shapes: a tensor that is gone, or retyped, is refused by name when the
    module is read; a checkpoint that is not there names the file."""
    folder = tmp_path / "ckpt"
    shutil.copytree(bf16_folder, folder)
    module = tmp_path / "m.mlir"
    assert main(["import-hf", str(folder), "-o", str(module)]) == 0
    tokens = np.zeros((1, 4), np.int32)

    index = json.loads((folder / "model.safetensors.index.json").read_text())
    moved = dict(index, weight_map={k: v for k, v in index["weight_map"].items() if k != "model.norm.weight"})
    (folder / "model.safetensors.index.json").write_text(json.dumps(moved))
    with pytest.raises(Exception, match=r"no parameter 'model\.norm\.weight' in .*model\.safetensors\.index\.json"):
        Model(module).logits(tokens)

    shutil.rmtree(folder)
    with pytest.raises(Exception, match=r"model\.safetensors\.index\.json: cannot read the parameter archive: "
                                        r"No such file or directory \(named by the gptq\.parameters attribute"):
        Model(module).logits(tokens)


def test_embed_and_external_are_exclusive(tmp_path, bf16_folder, capsys):
    assert main(["import-hf", str(bf16_folder), "-o", str(tmp_path / "m.mlir"), "--embed-weights",
                 "--external-weights"]) == 1
    assert "--embed-weights and --external-weights both given" in capsys.readouterr().err
    assert not (tmp_path / "m.mlir").exists()


@pytest.fixture(scope="module")
def quantized_in_place(tmp_path_factory, imports) -> Path:
    """The in-place import quantized: the module refers to the checkpoint's
    shards and to the quantized archive beside it."""
    folder = tmp_path_factory.mktemp("quantized")
    calibration = folder / "calib.npy"
    np.save(calibration, np.random.default_rng(1).integers(0, 512, size=(8, 32)).astype(np.int32))
    out = folder / "q.mlir"
    runner.run_opt(imports[0], out, [f"--gptq-quantize-model=calibration={calibration} {QUANTIZE}"])
    return out


def test_export_reads_float_weights_a_run_of_rows_at_a_time(tmp_path, quantized_in_place, monkeypatch):
    """export-gptq holds no float tensor whole: with runs of 1 KiB it reads
    the checkpoint's tensors at most 1 KiB at a time and writes the same
    file as with the default runs, the file the safetensors package would
    write of the same tensors."""
    import torch
    from safetensors.torch import load_file, save_file

    whole = tmp_path / "whole"
    assert main(["export-gptq", str(quantized_in_place), "--out", str(whole)]) == 0
    reads = []
    read_range = inputs.SafetensorsFile.read_range

    def spy(self, name, offset, count):
        if not name.endswith(QUANTIZED):
            reads.append(count)
        return read_range(self, name, offset, count)

    monkeypatch.setattr(inputs.SafetensorsFile, "read_range", spy)
    monkeypatch.setattr(gptq, "CHUNK_BYTES", 1024)
    runs = tmp_path / "runs"
    assert main(["export-gptq", str(quantized_in_place), "--out", str(runs)]) == 0
    data = (whole / "model.safetensors").read_bytes()
    assert data == (runs / "model.safetensors").read_bytes()
    # The embedding (512 x 64 bfloat16) alone is 64 KiB.
    assert len(reads) > 64 and max(reads) <= 1024, reads
    tensors = load_file(str(whole / "model.safetensors"))
    assert tensors["model.embed_tokens.weight"].dtype == torch.bfloat16
    again = tmp_path / "again.safetensors"
    save_file(tensors, str(again), metadata=gptq.SAFETENSORS_METADATA)
    assert again.read_bytes() == data


def test_membership_of_a_rewritten_models_weights_reads_nothing(quantized_in_place, monkeypatch):
    """Asking whether a model has a float weight reads no tensor (the
    export asks whether the classifier is separate; a Mapping's default
    membership test made the value, which widened the 8B's lm_head whole)."""
    model = gptq.read_rewritten_model(quantized_in_place)

    def refuse(self, name, offset, count):
        raise AssertionError(f"read {name}")

    monkeypatch.setattr(inputs.SafetensorsFile, "read_range", refuse)
    assert "tok_embeddings" in model.weights and "layers.0.attention.wq" in model.layers
    assert "no such weight" not in model.weights


def test_export_of_a_damaged_archive_is_an_error(tmp_path, quantized_in_place, capsys):
    """A quantized archive cut short, or replaced while it is exported, is
    an error naming it, and no checkpoint is written."""
    module = tmp_path / "q.mlir"
    shutil.copy(quantized_in_place, module)
    archive = tmp_path / "q.safetensors"
    data = quantized_in_place.with_suffix(".safetensors").read_bytes()
    archive.write_bytes(data[:-100])
    out = tmp_path / "gptq"
    assert main(["export-gptq", str(module), "--out", str(out)]) == 1
    assert re.search(r"q\.safetensors: safetensors header: tensor \S+: data_offsets \[\d+, \d+\] outside the "
                     r"file's \d+ bytes of data", capsys.readouterr().err)
    assert not out.exists()

    archive.write_bytes(data)
    model = gptq.read_rewritten_model(module)
    replacement = tmp_path / "replacement"
    replacement.write_bytes(data)
    replacement.replace(archive)
    layer = model.layers["layers.0.attention.wq"]
    with pytest.raises(GPTQError, match=r"q\.safetensors: changed while it was read"):
        layer.qweight
