"""The llama2.c checkpoint reader: both header versions, untied classifiers, errors."""

import struct

import numpy as np
import pytest

from conftest import synthetic_checkpoint
from gptq_mlir import llama2c
from gptq_mlir.errors import GPTQError


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
