"""The input readers of import-hf, import-gptq and export-gptq refuse what
would hang them, exhaust memory or give a wrong result, with one line
naming the file and field, exit status 1 and no output: FIFOs and devices
in a file's place, JSON nested too deep or with non-JSON numbers, config
values out of range, sizes that disagree with the tensors present, and
damaged or mistyped parameter archives."""

import json
import os
import resource
import shutil
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

from conftest import synthetic_checkpoint
from gptq_mlir.checkpoints import gptq
from gptq_mlir.cli.commands import main
from gptq_mlir.errors import GPTQError
from gptq_mlir.files import inputs
from hf_convert import hf_config, write_gptq_checkpoint, write_hf_checkpoint

Q = "model.layers.0.self_attn.q_proj"


def _cli(args, limit_bytes=2 << 30, timeout=60):
    """The command line in a subprocess: bounded in time (a reader blocked on
    a FIFO fails the test instead of hanging it) and in address space."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    env = dict(os.environ, PYTHONPATH=str(Path(inputs.__file__).parents[2]))
    return subprocess.run([sys.executable, "-m", "gptq_mlir", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=timeout, preexec_fn=cap)


def _one_error(stderr: str, *fragments: str) -> None:
    assert stderr.startswith("gptq_mlir: error: ") and stderr.count("\n") == 1, stderr
    for fragment in fragments:
        assert fragment in stderr, stderr


def _error(capsys, *fragments):
    _one_error(capsys.readouterr().err, *fragments)


@pytest.fixture(scope="module")
def tiny():
    """dim 16, 2 layers, 4 query heads over 2 key/value heads, 37 tokens."""
    return synthetic_checkpoint()


@pytest.fixture
def hf_folder(tmp_path, tiny) -> Path:
    return write_hf_checkpoint(tiny, tmp_path / "hf")


@pytest.fixture
def gptq_folder(tmp_path, tiny) -> Path:
    return write_gptq_checkpoint(tiny, tmp_path / "gptq")


def test_the_tiny_checkpoints_import(tmp_path, hf_folder, gptq_folder):
    """The fixtures themselves are valid (so the refusals below are the
    readers' checks, not broken fixtures)."""
    assert main(["import-hf", str(hf_folder), "-o", str(tmp_path / "hf.mlir")]) == 0
    assert main(["import-gptq", str(gptq_folder), "-o", str(tmp_path / "gptq.mlir")]) == 0


# FIFOs and devices ---------------------------------------------------------------


def _shard(folder: Path) -> str:
    """Split ``folder``'s model.safetensors into two shards named by an
    index; returns the first shard's name."""
    from safetensors.numpy import load_file, save_file

    tensors = load_file(str(folder / "model.safetensors"))
    (folder / "model.safetensors").unlink()
    names = sorted(tensors)
    weight_map = {}
    for shard, part in enumerate((names[0::2], names[1::2])):
        file_name = f"model-{shard + 1:05d}-of-00002.safetensors"
        save_file({name: tensors[name] for name in part}, str(folder / file_name))
        weight_map.update({name: file_name for name in part})
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    return "model-00001-of-00002.safetensors"


@pytest.mark.parametrize(
    "command, target",
    [
        ("import-hf", "config.json"),
        ("import-hf", "model.safetensors"),
        ("import-hf", "model.safetensors.index.json"),
        ("import-hf", "shard"),
        ("import-gptq", "config.json"),
        ("import-gptq", "quantize_config.json"),
        ("import-gptq", "model.safetensors"),
    ],
)
@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_fifos_and_devices_are_refused(tmp_path, hf_folder, gptq_folder, command, target, kind):
    """A FIFO would block the reader for ever, /dev/zero feed it until memory
    runs out: both are refused by name before they are opened for reading."""
    folder = hf_folder if command == "import-hf" else gptq_folder
    if target in ("shard", "model.safetensors.index.json"):
        first = _shard(folder)
        target = first if target == "shard" else target
    path = folder / target
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    output = tmp_path / "out" / "model.mlir"
    output.parent.mkdir()
    result = _cli([command, folder, "-o", output])
    assert result.returncode == 1, result.stderr
    _one_error(result.stderr, str(path), "a FIFO" if kind == "fifo" else "a character device",
               "expected a regular file")
    assert list(output.parent.iterdir()) == []


def test_export_refuses_a_fifo_module_and_archive(tmp_path, gptq_folder):
    module = tmp_path / "m.mlir"
    assert main(["import-gptq", str(gptq_folder), "-o", str(module), "--external-weights"]) == 0
    archive = tmp_path / "m.weights.npz"
    archive.unlink()
    os.mkfifo(archive)
    result = _cli(["export-gptq", module, "--out", tmp_path / "ckpt"])
    _one_error(result.stderr, f"{archive}: parameter archive is a FIFO")
    fifo = tmp_path / "fifo.mlir"
    os.mkfifo(fifo)
    result = _cli(["export-gptq", fifo, "--out", tmp_path / "ckpt"])
    _one_error(result.stderr, f"{fifo}: model is a FIFO")
    assert not (tmp_path / "ckpt").exists()


# JSON ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, fragment",
    [
        (b"[" * 100_000 + b"]" * 100_000, "nested 100000 deep, deeper than 64"),
        (b'{"a": NaN}', "NaN is not a JSON value"),
        (b'{"a": -Infinity}', "-Infinity is not a JSON value"),
        (b'{"a": 1e999}', "number 1e999 is out of the range of a float"),
        (b'{"a": ' + b"9" * 5000 + b"}", "a number of 5000 characters, more than 40"),
        (b'{"a": 1, "a": 2}', 'key "a" appears twice'),
        (b'{"a": "\\udc00"}', "unpaired surrogate"),
        (b'{"a": "' + b"[" * 100 + b'"}', None),
        (b"\xff{}", "not UTF-8 text (byte 0)"),
    ],
)
def test_json_limits(text, fragment):
    if fragment is None:  # brackets inside a string are not nesting
        assert inputs.parse_json(text) == {"a": "[" * 100}
        return
    with pytest.raises(GPTQError) as caught:
        inputs.parse_json(text)
    assert fragment in str(caught.value), caught.value


@pytest.mark.parametrize("target", ["config.json", "model.safetensors.index.json"])
def test_deep_json_inputs(tmp_path, hf_folder, capsys, target):
    """100,000 levels of nesting were a RecursionError (a traceback)."""
    if target != "config.json":
        _shard(hf_folder)
    path = hf_folder / target
    content = json.loads(path.read_text())
    content["deep"] = "@"
    path.write_text(json.dumps(content).replace('"@"', "[" * 100_000 + "]" * 100_000))
    output = tmp_path / "model.mlir"
    assert main(["import-hf", str(hf_folder), "-o", str(output)]) == 1
    _error(capsys, str(path), "nested 100001 deep, deeper than 64")
    assert not output.exists()


def test_oversized_json_is_refused_before_reading(tmp_path, hf_folder, capsys):
    path = hf_folder / "config.json"
    with open(path, "r+b") as handle:
        handle.truncate(inputs.MAX_JSON_BYTES + 1)  # sparse
    assert main(["import-hf", str(hf_folder), "-o", str(tmp_path / "m.mlir")]) == 1
    _error(capsys, f"{path}: config of {inputs.MAX_JSON_BYTES + 1} bytes, larger than the {inputs.MAX_JSON_BYTES} bytes this reader accepts")


# Config values -------------------------------------------------------------------


@pytest.mark.parametrize(
    "key, value, fragment",
    [
        ("max_position_embeddings", 2**63, "field max_position_embeddings is 9223372036854775808, expected an integer in [1, 16777216]"),
        ("vocab_size", 2**31, "field vocab_size is 2147483648, expected an integer in [1, 2147483647]"),
        ("vocab_size", 38, "fields vocab_size 38 and hidden_size 16 disagree with tensor model.embed_tokens.weight of shape [37, 16]"),
        ("rope_theta", 1e-300, "field rope_theta is 1e-300, expected a number in (1, 3.40282e+38]"),
        ("rope_theta", 1e39, "field rope_theta is 1e+39, expected a number in (1, 3.40282e+38]"),
        ("rope_theta", "10000", 'field rope_theta is "10000", expected a number'),
        ("rms_norm_eps", 1e300, "field rms_norm_eps is 1e+300, expected a number in [1.17549e-38, 0.1]"),
        ("rms_norm_eps", 0, "field rms_norm_eps is 0, expected a number in [1.17549e-38, 0.1]"),
        ("rms_norm_eps", True, "field rms_norm_eps is true, expected a number"),
        ("hidden_size", 16.0, "field hidden_size is 16.0, expected a positive integer"),
        ("num_attention_heads", True, "field num_attention_heads is true, expected a positive integer"),
        ("head_dim", 4.0, "field head_dim is 4.0, expected a positive integer"),
    ],
)
def test_config_values_out_of_range(tmp_path, tiny, capsys, key, value, fragment):
    """Each was accepted: 2**63 positions wrote a module no tool parses,
    rope_theta 1e-300 made the rotary tables NaN, rms_norm_eps 1e300 made
    every logit zero, floats passed for integers."""
    config = hf_config(tiny)
    config[key] = value
    folder = write_hf_checkpoint(tiny, tmp_path / "hf", config=config)
    output = tmp_path / "out" / "model.mlir"
    output.parent.mkdir()
    assert main(["import-hf", str(folder), "-o", str(output), "--external-weights"]) == 1
    _error(capsys, f"{folder / 'config.json'}: ", fragment)
    assert list(output.parent.iterdir()) == []


@pytest.mark.parametrize("command", ["import-hf", "import-gptq"])
def test_huge_layer_count_is_refused_fast(tmp_path, tiny, command):
    """A 0.5 KB config.json claiming a billion layers built names for 9e9
    tensors (22 s and 4 GB, then MemoryError): the count is checked against
    the tensors the headers list first. In 512 MiB of address space and
    well within the time limit."""
    folder = write_hf_checkpoint(tiny, tmp_path / "hf") if command == "import-hf" else write_gptq_checkpoint(tiny, tmp_path / "g")
    config = json.loads((folder / "config.json").read_text())
    config["num_hidden_layers"] = 1_000_000_000
    (folder / "config.json").write_text(json.dumps(config))
    result = _cli([command, folder, "-o", tmp_path / "m.mlir"], limit_bytes=512 << 20, timeout=30)
    assert result.returncode == 1
    _one_error(result.stderr, "field num_hidden_layers is 1000000000, but", "holds tensors of layers 0 to 1")


@pytest.mark.parametrize(
    "where, value, fragment",
    [
        ("config", 4.0, "unsupported quantization_config.bits = 4.0, expected 2, 3, 4 or 8"),
        ("config", True, "unsupported quantization_config.bits = true"),
        ("config", "4", 'unsupported quantization_config.bits = "4"'),
        ("quantize_config", 4.0, "quantize_config.json: unsupported bits = 4.0"),
        ("quantize_config", 8, "quantize_config.json: field bits is 8, but config.json's quantization_config.bits is 4"),
    ],
)
def test_quantization_fields_must_be_integers(tmp_path, gptq_folder, capsys, where, value, fragment):
    """bits = 4.0 compared equal to 4 and failed later with an IndexError."""
    path = gptq_folder / ("config.json" if where == "config" else "quantize_config.json")
    content = json.loads(path.read_text())
    (content["quantization_config"] if where == "config" else content)["bits"] = value
    path.write_text(json.dumps(content))
    assert main(["import-gptq", str(gptq_folder), "-o", str(tmp_path / "m.mlir")]) == 1
    _error(capsys, fragment)
    assert not (tmp_path / "m.mlir").exists()


# safetensors headers -------------------------------------------------------------


def _header(tensors: dict, data: bytes = b"", length=None) -> bytes:
    header = json.dumps(tensors).encode()
    return (len(header) if length is None else length).to_bytes(8, "little") + header + data


F32_2 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}


@pytest.mark.parametrize(
    "data, fragment",
    [
        (b"\1\0\0", "shorter than the 8-byte header length"),
        ((1 << 62).to_bytes(8, "little") + b"{}", "header length 4611686018427387904, more than the 100000000"),
        (_header({"a": F32_2}, b"\0" * 8, length=5000), "header length 5000, but the file has"),
        (_header({"a": F32_2}, b"\0" * 4), "data_offsets [0, 8] outside the file's 4 bytes of data"),
        (_header({"a": dict(F32_2, shape=[3])}, b"\0" * 8), "8 bytes of data, but F32 [3] needs 12"),
        (_header({"a": dict(F32_2, shape=[2**62, 2**62])}, b"\0" * 8), f"needs {2**124 * 4}"),
        (_header({"a": dict(F32_2, dtype="F4")}, b"\0" * 8), 'dtype "F4", expected one of'),
        (_header({"a": dict(F32_2, dtype=["F32"])}, b"\0" * 8), 'dtype ["F32"], expected one of'),
        (_header({"a": dict(F32_2, shape=[2.0])}, b"\0" * 8), "shape [2.0], expected a list of sizes >= 0"),
        (_header({"a": F32_2, "b": F32_2}, b"\0" * 8), "tensor b at [0, 8] overlaps the tensor before it"),
        (_header({"a": dict(F32_2, data_offsets=[8, 16])}, b"\0" * 16), "tensor a at [8, 16] leaves bytes 0..8 unused"),
        (_header({"a": F32_2}, b"\0" * 12), "the tensors end at byte 8 of 12 bytes of data"),
        (_header({"__metadata__": {"a": 1}}), "__metadata__ is not an object of strings"),
        (b"\x02\0\0\0\0\0\0\0[]", "the header is not a JSON object"),
    ],
)
def test_safetensors_headers(data, fragment):
    with pytest.raises(GPTQError) as caught:
        inputs.parse_safetensors(data)
    assert fragment in str(caught.value), caught.value


def test_safetensors_reader_agrees_with_the_package(tmp_path):
    """Every dtype the readers return, BF16 widened exactly, as the
    safetensors package writes them."""
    import torch
    from safetensors.torch import save_file

    rng = np.random.default_rng(0)
    tensors = {
        "f32": torch.from_numpy(rng.standard_normal((3, 5)).astype(np.float32)),
        "f16": torch.from_numpy(rng.standard_normal(7).astype(np.float16)),
        "bf16": torch.from_numpy(rng.standard_normal((2, 3)).astype(np.float32)).to(torch.bfloat16),
        "i32": torch.arange(6, dtype=torch.int32).reshape(2, 3),
        "empty": torch.zeros((0, 4), dtype=torch.float32),
    }
    path = tmp_path / "t.safetensors"
    save_file(tensors, str(path))
    read = inputs.SafetensorsFile(path)
    assert sorted(read.tensors) == sorted(tensors)
    for name, tensor in tensors.items():
        expected = (tensor.to(torch.float32) if name == "bf16" else tensor).numpy()
        np.testing.assert_array_equal(read.read(name), expected, err_msg=name)
        assert read.read(name).dtype == expected.dtype


def test_a_shard_cut_short_after_its_header_was_read(tmp_path, hf_folder, capsys):
    """The file is checked again for each tensor: one truncated in between
    is an error, not a short array."""
    path = hf_folder / "model.safetensors"
    read = inputs.SafetensorsFile(path)
    with open(path, "r+b") as handle:
        handle.truncate(path.stat().st_size - 4)
    with pytest.raises(GPTQError, match="changed while it was read"):
        read.read(sorted(read.tensors)[0])
    assert main(["import-hf", str(hf_folder), "-o", str(tmp_path / "m.mlir")]) == 1
    _error(capsys, f"{path}: safetensors header: tensor model.norm.weight: data_offsets", "outside the file's")


# Checkpoint folders that contradict themselves -------------------------------------


@pytest.mark.parametrize("command", ["import-hf", "import-gptq"])
@pytest.mark.parametrize("case", ["a tensor in two shards", "a missing shard"])
def test_shards_that_contradict_the_index(tmp_path, tiny, capsys, command, case):
    """A tensor whose header entry is in two shards (the index naming one)
    was imported from the one the index names; an index naming a missing
    shard must say which: one line naming the files and the tensor, exit
    status 1, no output."""
    from safetensors.numpy import load_file, save_file

    folder = tmp_path / "ckpt"
    (write_hf_checkpoint if command == "import-hf" else write_gptq_checkpoint)(tiny, folder)
    first, second = folder / _shard(folder), folder / "model-00002-of-00002.safetensors"
    index = folder / "model.safetensors.index.json"
    if case == "a tensor in two shards":
        tensors = load_file(str(first))
        tensor = sorted(tensors)[0]
        copied = load_file(str(second))
        copied[tensor] = tensors[tensor]
        save_file(copied, str(second))
        fragments = [f"{index}: tensor {tensor} is in two shards, {first} and {second} (the index puts it in "
                     f"{first.name})"]
    else:
        second.unlink()
        fragments = [f"{index}: names the shard {second.name}", f"but {second} is missing"]
    output = tmp_path / "m.mlir"
    assert main([command, str(folder), "-o", str(output)]) == 1
    _error(capsys, *fragments)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]


# export-gptq's input -------------------------------------------------------------


@pytest.fixture
def external_module(tmp_path, gptq_folder):
    """import-gptq --external-weights of the tiny checkpoint: (module, archive)."""
    module = tmp_path / "m.mlir"
    assert main(["import-gptq", str(gptq_folder), "-o", str(module), "--external-weights"]) == 0
    return module, tmp_path / "m.weights.npz"


def _rewrite_archive(archive: Path, name: str, array: np.ndarray) -> None:
    """Replace member ``name.npy`` of the archive by ``array`` (pickled if
    an object array)."""
    members = {}
    with zipfile.ZipFile(archive) as source:
        for info in source.infolist():
            members[info.filename] = source.read(info)
    import io

    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, allow_pickle=True)
    members[f"{name}.npy"] = buffer.getvalue()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as target:
        for member, data in members.items():
            target.writestr(member, data)


def _flip_a_data_byte(archive: Path, name: str) -> None:
    with zipfile.ZipFile(archive) as source:
        info = source.getinfo(f"{name}.npy")
    with open(archive, "r+b") as handle:
        handle.seek(info.header_offset + 26)
        name_length, extra_length = np.frombuffer(handle.read(4), "<u2")
        last = info.header_offset + 30 + int(name_length) + int(extra_length) + info.compress_size - 1
        handle.seek(last)
        byte = handle.read(1)[0]
        handle.seek(last)
        handle.write(bytes([byte ^ 0x40]))


def _edit_module(module: Path, old: str, new: str) -> None:
    text = module.read_text()
    assert text.count(old) == 1, old
    module.write_text(text.replace(old, new))


@pytest.mark.parametrize(
    "damage, fragment",
    [
        (lambda m, a: a.write_bytes(a.read_bytes()[: a.stat().st_size // 2]),
         "parameter archive is not a readable zip archive (File is not a zip file)"),
        (lambda m, a: _flip_a_data_byte(a, "norm"), "array norm: unreadable (Bad CRC-32 for file 'norm.npy')"),
        (lambda m, a: _rewrite_archive(a, "norm", np.array([None] * 16, dtype=object)),
         "array norm: dtype |O, expected <f4"),
        (lambda m, a: _rewrite_archive(a, f"layers.0.attention.wq.qweight", np.zeros((16, 2), np.int64)),
         "array layers.0.attention.wq.qweight: dtype <i8, expected <i4"),
        (lambda m, a: _rewrite_archive(a, "norm", np.zeros(15, np.float32)), "array norm: shape [15], expected [16]"),
        # The dialect's verifier, as the C API parses the module.
        (lambda m, a: _edit_module(m, "n_layers = 2 : i64, ", ""), "error: 'gptq.model' is missing key 'n_layers'"),
        (lambda m, a: _edit_module(m, "dim = 16 : i64", "dim = 64.5 : f32"),
         "error: expected 'gptq.model' key 'dim' to be an i64 integer, found 6.450000e+01 : f32"),
        (lambda m, a: _edit_module(m, "n_layers = 2 : i64", "n_layers = 1000000000 : i64"),
         "attribute gptq.model: n_layers is 1000000000, but the module's weights are those of 2 layers"),
    ],
)
def test_export_refuses_damaged_inputs(tmp_path, external_module, capsys, damage, fragment):
    """Each was a traceback (BadZipFile, ValueError, KeyError) or, for the
    int64 qweight, a checkpoint with a wrong qweight and exit status 0."""
    module, archive = external_module
    damage(module, archive)
    out = tmp_path / "ckpt"
    assert main(["export-gptq", str(module), "--out", str(out)]) == 1
    _error(capsys, fragment)
    assert not out.exists()


def test_export_refuses_a_bad_hf_config_attribute(tmp_path, hf_folder, capsys):
    """gptq.hf_config must be JSON (it was json.loads'd: a traceback) and
    agree with gptq.model's sizes (else the export's config.json contradicts
    its tensors)."""
    module = tmp_path / "hf.mlir"
    assert main(["import-hf", str(hf_folder), "-o", str(module)]) == 0
    quantized = _rtn(module, tmp_path / "q.mlir")
    capsys.readouterr()
    text = quantized.read_text()
    start = text.index('gptq.hf_config = "') + len('gptq.hf_config = "')
    end = text.index('"', start)
    for replacement, fragment in [
        ("not JSON", "attribute gptq.hf_config: not valid JSON: Expecting value"),
        (text[start:end].replace("\\22hidden_size\\22: 16", "\\22hidden_size\\22: 17"),
         "attribute gptq.hf_config: config: dim 17 is not a multiple of n_heads 4"),
        (text[start:end].replace("\\22hidden_size\\22: 16", "\\22hidden_size\\22: 32"),
         "attribute gptq.hf_config: hidden_size gives dim = 32, but gptq.model has dim = 16"),
    ]:
        quantized.write_text(text[:start] + replacement + text[end:])
        assert main(["export-gptq", str(quantized), "--out", str(tmp_path / "ckpt")]) == 1
        _error(capsys, fragment)
    assert not (tmp_path / "ckpt").exists()


def _rtn(module: Path, output: Path) -> Path:
    from gptq_mlir.runtime import runner

    if runner.find_opt() is None:
        pytest.skip("gptq-opt is not built")
    runner.run_opt(module, output, [r"--gptq-quantize-model=method=rtn bits=4 include=^layers\.0\.attention\.wq$"])
    return output


def test_export_of_truncated_bytecode_is_one_line(tmp_path, gptq_opt, gptq_folder):
    """The parser's diagnostics for a cut-off bytecode file were passed on as
    several lines."""
    from gptq_mlir.runtime import runner

    module = tmp_path / "m.mlir"
    assert main(["import-gptq", str(gptq_folder), "-o", str(module)]) == 0
    bytecode = tmp_path / "m.mlirbc"
    runner.run_opt(module, bytecode, ["--emit-bytecode"])
    data = bytecode.read_bytes()
    bytecode.write_bytes(data[: len(data) // 2])
    result = _cli(["export-gptq", bytecode, "--out", tmp_path / "ckpt"])
    assert result.returncode == 1
    _one_error(result.stderr, f"{bytecode}:0:0: error: attempting to parse ")
    assert not (tmp_path / "ckpt").exists()


def test_export_still_reads_a_valid_archive(tmp_path, external_module):
    """The checks pass what import-gptq writes: the export of its module has
    the checkpoint's quantized layer."""
    module, _ = external_module
    out = tmp_path / "ckpt"
    assert main(["export-gptq", str(module), "--out", str(out)]) == 0
    from safetensors.numpy import load_file

    tensors = load_file(str(out / "model.safetensors"))
    assert tensors[f"{Q}.qweight"].dtype == np.int32 and tensors[f"{Q}.qweight"].shape == (2, 16)


def _scale_beyond_float16(module: Path, archive: Path) -> str:
    scales = np.ones((16, 1), np.float32)
    scales[3, 0] = 1e6
    _rewrite_archive(archive, "layers.0.attention.wq.scales", scales)
    return ("layer layers.0.attention.wq: scale 1e+06 of tensor layers.0.attention.wq.scales (row 3, group 0) "
            "does not fit float16")


def _weight_beyond_float16(module: Path, archive: Path) -> str:
    _edit_module(module, '"tok_embeddings" = "F32"', '"tok_embeddings" = "F16"')
    with zipfile.ZipFile(archive) as source:
        embeddings = np.load(source.open("tok_embeddings.npy")).copy()
    embeddings[5, 2] = 1e6
    _rewrite_archive(archive, "tok_embeddings", embeddings)
    return "weight tok_embeddings holds 1e+06, beyond the range of F16, its dtype in the checkpoint"


def _vocabulary_edited(module: Path, archive: Path) -> str:
    # gptq.model's vocab_size and config.json's in gptq.hf_config, the
    # embeddings left as they were.
    _edit_module(module, "vocab_size = 37 : i64", "vocab_size = 36 : i64")
    _edit_module(module, "\\22vocab_size\\22: 37", "\\22vocab_size\\22: 36")
    return ("weight tok_embeddings (model.embed_tokens.weight) has shape [37, 16], but the sizes of attribute "
            "gptq.model (dim 16, hidden_dim 40, vocab_size 36, 4/2 heads) give [36, 16]")


@pytest.mark.parametrize("damage", [_vocabulary_edited, _scale_beyond_float16, _weight_beyond_float16])
def test_export_refuses_what_it_cannot_write_faithfully(tmp_path, external_module, capsys, damage):
    """A vocabulary edited in the module's sizes but not in its tensors gave
    a checkpoint whose config.json contradicts its embeddings, exit status
    0; a scale or a float16 weight beyond float16 printed NumPy's
    "RuntimeWarning: overflow encountered in cast" beside the error (or
    wrote infinity). One line naming the module and tensor, no warning, no
    output."""
    module, archive = external_module
    fragment = damage(module, archive)
    out = tmp_path / "ckpt"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["export-gptq", str(module), "--out", str(out)]) == 1
    assert [str(w.message) for w in caught] == []
    _error(capsys, f"{module}: {fragment}")
    assert not out.exists()


def test_numpy_warnings_in_imports_are_errors(tmp_path, monkeypatch, capsys):
    """Whatever NumPy would warn about in an import or export (an overflow
    the code does not check itself) is one line, not a warning beside the
    command's own."""

    def overflowing(path):
        return np.array([1e38], np.float32) * np.float32(10)

    monkeypatch.setattr("gptq_mlir.importers.llama2c.read_checkpoint", overflowing)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["import-llama2c", str(tmp_path / "ck.bin"), "-o", str(tmp_path / "m.mlir")]) == 1
    assert [str(w.message) for w in caught] == []
    _error(capsys, "internal error: FloatingPointError: overflow encountered in multiply")
    assert list(tmp_path.iterdir()) == []
