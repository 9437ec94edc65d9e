"""The llama2.c checkpoint reader: both header versions, untied classifiers, errors."""

import os
import resource
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import synthetic_checkpoint
from gptq_mlir.errors import GPTQError
from gptq_mlir.importers import llama2c


def test_stories260k_header(checkpoint_path):
    ckpt = llama2c.read_checkpoint(checkpoint_path)
    cfg = ckpt.config
    assert (cfg.dim, cfg.hidden_dim, cfg.n_layers, cfg.n_heads, cfg.n_kv_heads) == (64, 172, 5, 8, 4)
    assert (cfg.vocab_size, cfg.seq_len, cfg.shared_classifier) == (512, 512, True)
    assert ckpt.version == 0
    assert ckpt.weights["layers.4.feed_forward.w2"].shape == (64, 172)
    assert ckpt.weights["layers.0.attention.wk"].shape == (32, 64)
    assert ckpt.classifier_name == "tok_embeddings"


def test_rope_tables_match_the_checkpoint(checkpoint_path):
    """The tables computed for version 1 files equal those legacy files store."""
    ckpt = llama2c.read_checkpoint(checkpoint_path)
    cos, sin = llama2c.rope_tables(ckpt.config.head_size, ckpt.config.seq_len)
    np.testing.assert_allclose(cos, ckpt.weights["freq_cis_real"], atol=2e-6)
    np.testing.assert_allclose(sin, ckpt.weights["freq_cis_imag"], atol=2e-6)


@pytest.mark.parametrize("version", [0, 1])
@pytest.mark.parametrize("shared", [True, False])
def test_round_trip(version, shared):
    ckpt = synthetic_checkpoint(shared_classifier=shared)
    data = llama2c.serialize_checkpoint(ckpt.config, ckpt.weights, version)
    parsed = llama2c.parse_checkpoint(data)
    assert parsed.version == version
    assert parsed.config == ckpt.config
    assert parsed.classifier_name == ("tok_embeddings" if shared else "output")
    for name, array in ckpt.weights.items():
        np.testing.assert_allclose(parsed.weights[name], array, atol=1e-6, err_msg=name)


def test_version1_layout_puts_norms_first():
    ckpt = synthetic_checkpoint(n_layers=1)
    data = llama2c.serialize_checkpoint(ckpt.config, ckpt.weights, 1)
    assert struct.unpack_from("<I", data, 0)[0] == 0x616B3432
    assert data[:4] == b"24ka"
    body = np.frombuffer(data, dtype="<f4", offset=256)
    dim = ckpt.config.dim
    np.testing.assert_array_equal(body[:dim], ckpt.weights["layers.0.attention_norm"])
    np.testing.assert_array_equal(body[dim : 2 * dim], ckpt.weights["layers.0.ffn_norm"])
    np.testing.assert_array_equal(body[2 * dim : 3 * dim], ckpt.weights["norm"])


def test_legacy_negative_vocab_means_untied_classifier():
    ckpt = synthetic_checkpoint(shared_classifier=False)
    data = llama2c.serialize_checkpoint(ckpt.config, ckpt.weights, 0)
    assert struct.unpack_from("<7i", data)[5] == -ckpt.config.vocab_size
    tail = np.frombuffer(data[-4 * ckpt.weights["output"].size :], dtype="<f4")
    np.testing.assert_array_equal(tail, ckpt.weights["output"].ravel())


def test_truncated(checkpoint_path):
    data = checkpoint_path.read_bytes()
    with pytest.raises(GPTQError, match="truncated checkpoint: 1056536 bytes, expected 1056540"):
        llama2c.parse_checkpoint(data[:-4])
    with pytest.raises(GPTQError, match="truncated checkpoint"):
        llama2c.parse_checkpoint(data[:10])
    with pytest.raises(GPTQError, match="corrupt checkpoint"):
        llama2c.parse_checkpoint(data + b"\0" * 4)


def test_unsupported_version():
    header = struct.pack("<Ii", 0x616B3432, 2) + b"\0" * 248
    with pytest.raises(GPTQError, match="unsupported llama2.c checkpoint version 2"):
        llama2c.parse_checkpoint(header)


@pytest.mark.parametrize(
    "params, message",
    [
        ((0, 8, 1, 1, 1, 4, 4), "dim = 0"),
        ((6, 8, 1, 4, 4, 4, 4), "not a multiple of n_heads"),
        ((8, 8, 1, 4, 3, 4, 4), "not a multiple of n_kv_heads"),
        ((12, 8, 1, 4, 4, 4, 4), "head size 3 is odd"),
    ],
)
def test_invalid_header(params, message):
    with pytest.raises(GPTQError, match=message):
        llama2c.parse_checkpoint(struct.pack("<7i", *params))


def test_non_finite_weights():
    ckpt = synthetic_checkpoint()
    ckpt.weights["layers.1.attention.wv"][0, 0] = np.nan
    data = llama2c.serialize_checkpoint(ckpt.config, ckpt.weights, 0)
    with pytest.raises(GPTQError, match="layers.1.attention.wv holds non-finite"):
        llama2c.parse_checkpoint(data)


def _run_limited(code: str, limit_bytes: int = 1 << 30) -> subprocess.CompletedProcess:
    """Run ``code`` in a Python whose address space is capped at ``limit_bytes``."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    env = dict(os.environ, PYTHONPATH=str(Path(llama2c.__file__).parents[2]))
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, preexec_fn=cap, env=env, timeout=120
    )


def _absurd_headers():
    legacy_layers = struct.pack("<7i", 64, 172, 2_000_000_000, 8, 4, 512, 512)
    legacy_vocab = struct.pack("<7i", 64, 172, 5, 8, 4, 2_000_000_000, 512)
    ckpt = synthetic_checkpoint()
    v1 = bytearray(llama2c.serialize_checkpoint(ckpt.config, ckpt.weights, 1))
    struct.pack_into("<i", v1, 8 + 6 * 4, 200_000_000)  # seq_len: the file's size does not depend on it
    return {"legacy-layers": legacy_layers + b"\0" * 64, "legacy-vocab": legacy_vocab, "v1-seq-len": bytes(v1)}


@pytest.mark.parametrize("name", ["legacy-layers", "legacy-vocab", "v1-seq-len"])
def test_absurd_header_is_refused_before_allocating(name, tmp_path):
    """Headers that claim billions of layers, tokens or positions are refused
    from the header and the file size, within 1 GiB of address space, both
    from bytes and from a file."""
    path = tmp_path / "absurd.bin"
    path.write_bytes(_absurd_headers()[name])
    code = (
        "import sys\n"
        "from gptq_mlir.importers import llama2c\n"
        "from gptq_mlir.errors import GPTQError\n"
        "for read in (llama2c.read_checkpoint, lambda p: llama2c.parse_checkpoint(open(p, 'rb').read())):\n"
        "    try:\n"
        f"        read({str(path)!r})\n"
        "    except GPTQError as error:\n"
        "        print(error)\n"
        "    else:\n"
        "        sys.exit('accepted')\n"
    )
    result = _run_limited(code)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert len(lines) == 2
    if name == "v1-seq-len":
        assert all("seq_len 200000000 needs rotary tables" in line for line in lines)
    else:
        assert all("truncated checkpoint" in line for line in lines)


def test_body_floats_is_the_layout_size():
    for shared in (True, False):
        cfg = synthetic_checkpoint(shared_classifier=shared).config
        for version in (0, 1):
            layout = llama2c.weight_layout(cfg, version)
            assert llama2c.body_floats(cfg, version) == sum(int(np.prod(s)) for _, s in layout)


def test_oversized_file_is_refused_before_reading(tmp_path):
    """The header is checked against the file size before the body is read."""
    path = tmp_path / "big.bin"
    ckpt = synthetic_checkpoint()
    with open(path, "wb") as handle:
        handle.write(llama2c.serialize_checkpoint(ckpt.config, ckpt.weights, 0))
        handle.truncate(1 << 40)  # sparse: a terabyte on paper
    with pytest.raises(GPTQError, match=r"big.bin: corrupt checkpoint: 1099511627776 bytes, expected \d+"):
        llama2c.read_checkpoint(path)


def test_endless_device_is_refused(tmp_path):
    """/dev/zero has no size and no end: the header (all zeros) is refused
    before anything past it is read."""
    code = (
        "from gptq_mlir.data import tokenizer\n"
        "from gptq_mlir.importers import llama2c\n"
        "from gptq_mlir.errors import GPTQError\n"
        "for read in (llama2c.read_checkpoint, tokenizer.load_tokenizer):\n"
        "    try:\n"
        "        read('/dev/zero')\n"
        "    except GPTQError as error:\n"
        "        print(error)\n"
    )
    result = _run_limited(code)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines() == [
        "/dev/zero: invalid checkpoint header: dim = 0, expected > 0",
        "/dev/zero: not a llama2.c tokenizer: max_token_length is 0, expected 1..1024",
    ]


@pytest.mark.parametrize("extra", [b"", b"\0" * 8])
def test_checkpoint_from_a_pipe(tmp_path, extra):
    """A pipe has no size: its header says how much to read, and a longer
    stream is refused without reading it all."""
    ckpt = synthetic_checkpoint()
    data = llama2c.serialize_checkpoint(ckpt.config, ckpt.weights, 0)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen(
        [sys.executable, "-c", f"import sys; open({str(fifo)!r}, 'wb').write(sys.stdin.buffer.read())"],
        stdin=subprocess.PIPE,
    )
    try:
        writer.stdin.write(data + extra)
        writer.stdin.close()
        if extra:
            with pytest.raises(GPTQError, match=f"fifo: longer than the {len(data)} bytes its header allows"):
                llama2c.read_checkpoint(fifo)
        else:
            assert llama2c.read_checkpoint(fifo).config == ckpt.config
    finally:
        writer.wait(timeout=60)
