"""The llama2.c importer: valid MLIR, named linear layers, weights, atomic output."""

import re
import struct
import subprocess
import zipfile

import numpy as np
import pytest

from conftest import synthetic_checkpoint, write_checkpoint
from gptq_mlir.cli.commands import main
from gptq_mlir.errors import GPTQError
from gptq_mlir.importers import emitter, llama2c
from gptq_mlir.runtime.model import read_model_attributes

LINEARS = [f"attention.{w}" for w in ("wq", "wk", "wv", "wo")] + [
    f"feed_forward.{w}" for w in ("w1", "w2", "w3")
]


def _verify(mlir_opt, path):
    result = subprocess.run([mlir_opt, str(path), "-o", "/dev/null"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]


def _resources(text):
    """name -> float32 array, decoded from the dialect_resources section."""
    section = text[text.index("dialect_resources") :]
    blobs = {}
    for name, blob in re.findall(r'([\w.]+): "0x([0-9a-f]+)"', section):
        raw = bytes.fromhex(blob)
        assert raw[:4] == b"\x04\0\0\0", "alignment word"
        blobs[name] = np.frombuffer(raw[4:], dtype="<f4")
    return blobs


def test_stories260k_module(stories_mlir, checkpoint_path, mlir_opt, gptq_run):
    _verify(mlir_opt, stories_mlir)
    text = stories_mlir.read_text()
    assert "func.func @forward(%tokens: tensor<?x?xi32>) -> tensor<?x?x?xf32>" in text
    ckpt = llama2c.read_checkpoint(checkpoint_path)
    ops = set(re.findall(r"= ((?:linalg|tensor|arith|math)\.\w+)", text))
    assert {op.split(".")[0] for op in ops} <= {"linalg", "tensor", "arith", "math"}
    for layer in range(5):
        for linear in LINEARS:
            name = f"layers.{layer}.{linear}"
            shape = "x".join(map(str, ckpt.weights[name].shape))
            assert (
                f'arith.constant dense_resource<{name}> : tensor<{shape}xf32> loc("{name}")' in text
            )
            contraction = re.search(rf'= linalg\.generic .*\n(?:.*\n)*?.*\}} -> .* loc\("{re.escape(name)}"\)', text)
            assert contraction, name
    # Once in each entry: forward, prefill, decode.
    assert text.count('loc("output")') == 3
    assert text.count("dense_resource<tok_embeddings>") == 3
    blobs = _resources(text)
    assert set(blobs) == set(ckpt.weights)
    for name, array in ckpt.weights.items():
        np.testing.assert_array_equal(blobs[name], array.ravel(), err_msg=name)
    attrs = read_model_attributes(stories_mlir)
    assert attrs == {
        "dim": 64, "hidden_dim": 172, "n_heads": 8, "n_kv_heads": 4,
        "n_layers": 5, "seq_len": 512, "vocab_size": 512,
    }


@pytest.mark.parametrize(
    "version, kwargs",
    [
        (0, {}),
        (1, {}),
        (0, {"n_kv_heads": 4, "shared_classifier": False}),
        (1, {"n_kv_heads": 3, "n_layers": 3, "dim": 24, "n_heads": 3, "shared_classifier": False}),
        (1, {"n_heads": 4, "n_kv_heads": 1}),
    ],
)
def test_synthetic_checkpoints_import(tmp_path, mlir_opt, version, kwargs):
    ckpt = synthetic_checkpoint(**kwargs)
    source = write_checkpoint(tmp_path / "model.bin", ckpt, version)
    output = tmp_path / "model.mlir"
    assert main(["import-llama2c", str(source), "-o", str(output)]) == 0
    _verify(mlir_opt, output)
    text = output.read_text()
    classifier = "tok_embeddings" if ckpt.config.shared_classifier else "output"
    assert ("dense_resource<output>" in text) == (not ckpt.config.shared_classifier)
    assert re.search(rf"ins\(%\w+, (%\w+) : tensor<\?x\?x{ckpt.config.dim}xf32>, tensor<{ckpt.config.vocab_size}x", text)
    blobs = _resources(text)
    np.testing.assert_array_equal(blobs[classifier], ckpt.weights[classifier].ravel())
    np.testing.assert_allclose(blobs["freq_cis_real"], ckpt.weights["freq_cis_real"].ravel(), atol=2e-6)


def test_truncated_checkpoint_leaves_no_output(tmp_path, checkpoint_path, capsys):
    source = tmp_path / "short.bin"
    source.write_bytes(checkpoint_path.read_bytes()[:500_000])
    output = tmp_path / "out.mlir"
    assert main(["import-llama2c", str(source), "-o", str(output)]) == 1
    assert "truncated checkpoint: 500000 bytes, expected 1056540" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == [source]


def test_failed_write_leaves_no_partial_file(tmp_path, checkpoint_path, monkeypatch):
    ckpt = llama2c.read_checkpoint(checkpoint_path)

    def fail(handle, resources):
        handle.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(emitter, "_write_resources", fail)
    output = tmp_path / "out.mlir"
    output.write_text("previous contents")
    with pytest.raises(GPTQError, match="cannot write .*out.mlir: disk full"):
        emitter.write_module(ckpt, output)
    assert output.read_text() == "previous contents"
    assert list(tmp_path.iterdir()) == [output]


def test_missing_checkpoint(tmp_path, capsys):
    assert main(["import-llama2c", str(tmp_path / "nope.bin"), "-o", str(tmp_path / "o.mlir")]) == 1
    assert "cannot read checkpoint" in capsys.readouterr().err
    assert not (tmp_path / "o.mlir").exists()


@pytest.fixture(scope="module")
def checked_model(tmp_path_factory):
    """A tiny imported model (vocab_size 37, seq_len 12) and its text."""
    path = tmp_path_factory.mktemp("checked") / "model.mlir"
    emitter.write_module(synthetic_checkpoint(), path)
    return path, path.read_text()


def _assert_position(text, message):
    """``line:col`` of the cf.assert with ``message`` in the module text."""
    for number, line in enumerate(text.splitlines(), start=1):
        if "cf.assert" in line and message in line:
            return f"{number}:{line.index('cf.assert') + 1}"
    raise AssertionError(f"no cf.assert with {message!r}")


@pytest.mark.parametrize(
    "tokens, message",
    [
        ([[1, 37]], "forward: token id out of range [0, vocab_size = 37)"),
        ([[1, -1]], "forward: token id out of range [0, vocab_size = 37)"),
        ([[10**8, 2]], "forward: token id out of range [0, vocab_size = 37)"),
        ([[1] * 13], "forward: sequence longer than the model's seq_len = 12"),
    ],
)
def test_model_checks_its_input(gptq_run, checked_model, tmp_path, tokens, message):
    path, text = checked_model
    np.save(tmp_path / "tokens.npy", np.array(tokens, np.int32))
    out = tmp_path / "out"
    result = subprocess.run(
        [str(gptq_run), str(path), "--entry", "forward", "--input", str(tmp_path / "tokens.npy"),
         "--output-dir", str(out)],
        capture_output=True, text=True,
    )
    assert result.returncode == 1, result.stderr
    assert result.stderr == f"gptq-run: error: {path}:{_assert_position(text, message)}: {message}\n"
    assert not out.exists()


def test_model_accepts_the_extreme_ids(gptq_run, checked_model, tmp_path):
    path, _ = checked_model
    np.save(tmp_path / "tokens.npy", np.array([[0] * 11 + [36]], np.int32))
    out = tmp_path / "out"
    subprocess.run(
        [str(gptq_run), str(path), "--entry", "forward", "--input", str(tmp_path / "tokens.npy"),
         "--output-dir", str(out)],
        check=True, capture_output=True,
    )
    assert np.load(out / "0.npy").shape == (1, 12, 37)


def test_external_weights_round_trip(tmp_path, checkpoint_path, stories_mlir, gptq_run, capsys):
    """--external-weights: a small module naming an aligned, uncompressed .npz
    that numpy reads, and the same logits through gptq-run as the inline
    import."""
    output = tmp_path / "ext" / "stories.mlir"
    output.parent.mkdir()
    assert main(["import-llama2c", str(checkpoint_path), "-o", str(output), "--external-weights"]) == 0
    weights = output.parent / "stories.weights.npz"
    assert f"wrote {output} and {weights}" in capsys.readouterr().err
    assert sorted(p.name for p in output.parent.iterdir()) == ["stories.mlir", "stories.weights.npz"]
    text = output.read_text()
    assert 'gptq.parameters = "stories.weights.npz"' in text
    assert "dialect_resources" not in text
    assert len(text) < stories_mlir.stat().st_size / 5
    ckpt = llama2c.read_checkpoint(checkpoint_path)
    with np.load(weights) as archive:
        assert set(archive.files) == set(ckpt.weights)
        for name, array in ckpt.weights.items():
            np.testing.assert_array_equal(archive[name], array, err_msg=name)
    # Every array's data starts on a 64-byte boundary of the file, so the
    # tools read it in place.
    raw = weights.read_bytes()
    with zipfile.ZipFile(weights) as archive:
        for info in archive.infolist():
            assert info.compress_type == zipfile.ZIP_STORED
            at = info.header_offset
            name_size, extra_size = struct.unpack("<HH", raw[at + 26 : at + 30])
            npy = at + 30 + name_size + extra_size
            header_size = struct.unpack("<H", raw[npy + 8 : npy + 10])[0]
            assert (npy + 10 + header_size) % 64 == 0, info.filename
    assert read_model_attributes(output) == read_model_attributes(stories_mlir)

    tokens = np.random.default_rng(3).integers(0, 512, size=(2, 24)).astype(np.int32)
    np.save(tmp_path / "tokens.npy", tokens)
    logits = []
    for module, out in [(stories_mlir, "inline"), (output, "external")]:
        command = [str(gptq_run), str(module), "--entry", "forward", "--input", str(tmp_path / "tokens.npy")]
        result = subprocess.run(command + ["--output-dir", str(tmp_path / out)], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        logits.append(np.load(tmp_path / out / "0.npy"))
    np.testing.assert_array_equal(logits[0], logits[1])


def test_external_weights_write_both_files_or_neither(tmp_path, checkpoint_path, monkeypatch):
    ckpt = llama2c.read_checkpoint(checkpoint_path)

    def fail(resources, handle):
        handle.write(b"partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(emitter, "write_weights", fail)
    output = tmp_path / "out.mlir"
    output.write_text("previous contents")
    with pytest.raises(GPTQError, match="No space left on device"):
        emitter.write_module(ckpt, output, external_weights=True)
    assert output.read_text() == "previous contents"
    assert list(tmp_path.iterdir()) == [output]
