"""The PyTorch whole-model GPTQ oracle (bench/torch_gptq_model.py) checked piece by piece.

Its forward against the independent oracle forward, its round-to-nearest
against the grid formula of docs/gptq-semantics.md, its Hessians against
2/n * sum x x^T computed directly, and its calibration windows against
``python -m gptq_mlir calib``. A few short windows keep it fast.
"""

import json
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the oracle is written in PyTorch")

import oracle  # noqa: E402
from conftest import load_bench_module  # noqa: E402
from gptq_mlir.cli.commands import main  # noqa: E402
from gptq_mlir.data import corpus  # noqa: E402
from gptq_mlir.data.tokenizer import load_tokenizer  # noqa: E402
from gptq_mlir.importers import llama2c

tgm = load_bench_module("torch_gptq_model")


@pytest.fixture(scope="module")
def ckpt(checkpoint_path):
    return llama2c.read_checkpoint(checkpoint_path)


@pytest.fixture(scope="module")
def calib(tokenizer_path, text_path):
    """Six calibration windows of 32 tokens, as `calib --end-fraction 0.8` makes them."""
    return tgm.calibration_windows(tokenizer_path, text_path, 6, 32, seed=0)


@pytest.fixture(scope="module")
def heldout(tokenizer_path, text_path):
    """Eight held-out windows of 64 tokens from the last fifth."""
    return tgm.heldout_windows(tokenizer_path, text_path, 64)[:8]


def _with_weights(ckpt, weights):
    """The checkpoint with some weights replaced (by name)."""
    return llama2c.Llama2cCheckpoint(ckpt.config, {**ckpt.weights, **weights}, ckpt.version)


def _rtn_numpy(W, bits, group_size):
    """Section 2 of docs/gptq-semantics.md, asymmetric, on each row (or row and group)."""
    maxq = 2**bits - 1
    step = W.shape[1] if group_size == -1 else group_size
    out = np.empty_like(W)
    for c in range(0, W.shape[1], step):
        x = W[:, c : c + step]
        xmin = np.minimum(x.min(1), 0)
        xmax = np.maximum(x.max(1), 0)
        both0 = (xmin == 0) & (xmax == 0)
        xmin[both0], xmax[both0] = -1, 1
        scale = ((xmax - xmin) / np.float32(maxq)).astype(np.float32)[:, None]
        zero = np.round(-xmin[:, None] / scale)
        out[:, c : c + step] = scale * (np.clip(np.round(x / scale) + zero, 0, maxq) - zero)
    return out


def test_calibration_windows_are_those_of_calib(tmp_path, tokenizer_path, text_path, calib):
    path = tmp_path / "calib.npy"
    args = ["--tokenizer", str(tokenizer_path), "--text", str(text_path), "--end-fraction", "0.8"]
    assert main(["calib", *args, "--samples", "6", "--seqlen", "32", "-o", str(path)]) == 0
    np.testing.assert_array_equal(np.load(path), calib)
    assert calib.dtype == np.int32


def test_heldout_windows_are_those_of_perplexity(tokenizer_path, text_path):
    stream = corpus.load_corpus(load_tokenizer(tokenizer_path), text_path, start_fraction=0.8)
    windows = tgm.heldout_windows(tokenizer_path, text_path, 256)
    assert windows.shape == (len(stream) // 256, 256)
    np.testing.assert_array_equal(windows.reshape(-1), stream[: windows.size])


def test_forward_matches_oracle(ckpt, heldout):
    with torch.no_grad():
        got = tgm.build_model(ckpt)(torch.from_numpy(heldout[:2].astype(np.int64))).numpy()
    np.testing.assert_allclose(got, oracle.forward(ckpt, heldout[:2]), rtol=1e-5, atol=1e-4)


def test_rtn_weights_follow_the_grid_formula_and_are_written_back(ckpt, calib, heldout):
    config = tgm.Config(method="rtn", bits=3, group_size=32)
    model, report = tgm.quantize_model(ckpt, calib, config)
    names = [f"layers.{i}.{short}" for i in range(ckpt.config.n_layers) for short in tgm.BLOCK_LAYERS]
    assert sorted(report["weights"]) == sorted(names)
    for name in names:
        want = _rtn_numpy(ckpt.weights[name], 3, 32)
        np.testing.assert_allclose(report["weights"][name], want, rtol=0, atol=1e-7, err_msg=name)
        assert len(np.unique(report["weights"][name][0, :32])) <= 8
    # The embedding (and tied classifier) stay float.
    np.testing.assert_array_equal(model.tok_embeddings.weight.detach().numpy(), ckpt.weights["tok_embeddings"])

    # The PyTorch model holds the quantized weights: its logits and perplexity
    # are the oracle's for the checkpoint with the same weights.
    quantized = _with_weights(ckpt, report["weights"])
    with torch.no_grad():
        logits = model(torch.from_numpy(heldout[:2].astype(np.int64))).numpy()
    np.testing.assert_allclose(logits, oracle.forward(quantized, heldout[:2]), rtol=1e-5, atol=1e-4)
    got = tgm.perplexity(model, heldout, batch=3)
    assert got == pytest.approx(oracle.perplexity(quantized, heldout), rel=1e-6)
    assert got > tgm.perplexity(tgm.build_model(ckpt), heldout)

    # Round-to-nearest needs no calibration.
    _, again = tgm.quantize_model(ckpt, calib[:1], config)
    for name in names:
        np.testing.assert_array_equal(again["weights"][name], report["weights"][name])


def _direct_hessians(ckpt, windows, block):
    """2/n * sum x x^T of the inputs of block ``block``'s layers, float model, all tokens at once."""
    model = tgm.build_model(ckpt)
    tokens = torch.from_numpy(windows.astype(np.int64))
    cos, sin = model.freq_cis_real[: tokens.shape[1]], model.freq_cis_imag[: tokens.shape[1]]
    with torch.no_grad():
        x = model.tok_embeddings(tokens)
        for layer in model.layers[:block]:
            x = layer(x, cos, sin)
        layer = model.layers[block]
        attn_in = layer.attention_norm(x)
        attention = layer.attention
        # The input of wo: the attention mix, computed from the oracle's helpers.
        b, s = tokens.shape
        hs = ckpt.config.head_size
        q = attention.wq(attn_in).view(b, s, -1, hs)
        k = attention.wk(attn_in).view(b, s, -1, hs)
        v = attention.wv(attn_in).view(b, s, -1, hs)
        q, k = oracle._rotary(q, cos, sin), oracle._rotary(k, cos, sin)
        rep = ckpt.config.n_heads // ckpt.config.n_kv_heads
        k, v = k.repeat_interleave(rep, dim=2), v.repeat_interleave(rep, dim=2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(2, 3) / math.sqrt(hs) + torch.full((s, s), float("-inf")).triu(1)
        mix = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(b, s, -1)
        h = x + attention.wo(mix)
        ffn_in = layer.ffn_norm(h)
        ff = layer.feed_forward
        w2_in = torch.nn.functional.silu(ff.w1(ffn_in)) * ff.w3(ffn_in)
    result = {}
    for short, inp in (("attention.wq", attn_in), ("attention.wo", mix), ("feed_forward.w1", ffn_in),
                       ("feed_forward.w2", w2_in)):
        flat = inp.reshape(-1, inp.shape[-1]).double()
        result[f"layers.{block}.{short}"] = (2.0 / len(windows) * flat.T @ flat).numpy()
    return result


@pytest.fixture(scope="module")
def hessians_by_mode(ckpt, calib):
    config = tgm.Config(method="gptq", bits=3)
    return {
        mode: tgm.quantize_model(ckpt, calib, config, sequential=mode, keep_hessians=True)[1]["hessians"]
        for mode in tgm.SEQUENTIAL_MODES
    }


def test_sequential_none_hessians_are_those_of_the_float_model(ckpt, calib, hessians_by_mode):
    got = hessians_by_mode["none"]
    assert len(got) == 7 * ckpt.config.n_layers
    for block in (0, 2, ckpt.config.n_layers - 1):
        for name, want in _direct_hessians(ckpt, calib, block).items():
            np.testing.assert_allclose(got[name], want, rtol=2e-4, atol=2e-5 * np.abs(want).max(), err_msg=name)
    # wq, wk and wv see the same input.
    np.testing.assert_array_equal(got["layers.1.attention.wq"], got["layers.1.attention.wv"])


def test_sequential_modes_calibrate_on_quantized_predecessors(ckpt, calib, hessians_by_mode):
    none, blocks, layers = hessians_by_mode["none"], hessians_by_mode["blocks"], hessians_by_mode["layers"]

    def same(a, b):
        return np.array_equal(a, b)

    # Block 0, first group: every mode sees the float embeddings.
    assert same(layers["layers.0.attention.wq"], none["layers.0.attention.wq"])
    # blocks: all of block 0 from one float pass; layers: wo after q, k, v are quantized.
    for short in ("attention.wo", "feed_forward.w1", "feed_forward.w2"):
        assert same(blocks[f"layers.0.{short}"], none[f"layers.0.{short}"]), short
        assert not same(layers[f"layers.0.{short}"], none[f"layers.0.{short}"]), short
    # Later blocks see the quantized outputs of earlier blocks (blocks, layers)
    # or the float ones (none).
    assert not same(blocks["layers.1.attention.wq"], none["layers.1.attention.wq"])
    assert not same(layers["layers.1.attention.wq"], none["layers.1.attention.wq"])


def test_gptq_beats_rtn_on_its_layer_objective(ckpt, calib, hessians_by_mode):
    """Each layer's GPTQ weights have a smaller tr((W - Q) H (W - Q)^T) than round-to-nearest."""
    config = tgm.Config(method="gptq", bits=3)
    _, report = tgm.quantize_model(ckpt, calib, config, sequential="none")
    for name, H in hessians_by_mode["none"].items():
        W = ckpt.weights[name].astype(np.float64)
        errors = {
            "gptq": W - report["weights"][name],
            "rtn": W - _rtn_numpy(ckpt.weights[name], 3, -1),
        }
        cost = {key: float(np.einsum("ij,jk,ik->", e, H, e)) for key, e in errors.items()}
        assert cost["gptq"] < cost["rtn"], (name, cost)


def test_command_line(tmp_path, tokenizer_path, text_path, checkpoint_path, capsys):
    calib_path = tmp_path / "calib.npy"
    args = ["--tokenizer", str(tokenizer_path), "--text", str(text_path)]
    assert main(["calib", *args, "--end-fraction", "0.8", "--samples", "3", "--seqlen", "16", "-o", str(calib_path)]) == 0
    out = tmp_path / "out"
    code = tgm.main([
        "--checkpoint", str(checkpoint_path), *args, "--calibration", str(calib_path),
        "--eval-seqlen", "32", "--eval-windows", "2", "--method", "gptq,rtn", "--bits", "3",
        "--json", str(tmp_path / "r.json"), "--save-weights", str(out), "--save-hessians", "--quiet",
    ])
    assert code == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0] == "| method | bits | group size | act-order | perplexity | seconds |"
    assert [line.split("|")[1].strip() for line in table[2:]] == ["float32", "gptq", "rtn"]
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["meta"]["calibration_shape"] == [3, 16]
    assert result["meta"]["heldout_shape"] == [2, 32]
    labels = [r["label"] for r in result["results"]]
    assert labels == ["float32", "gptq-w3-row", "rtn-w3-row"]
    names = {f"layers.{i}.{short}" for i in range(5) for short in tgm.BLOCK_LAYERS}
    weights = np.load(out / "gptq-w3-row.npz")
    assert set(weights.files) == names
    assert set(np.load(out / "gptq-w3-row.hessians.npz").files) == names
    assert set(np.load(out / "rtn-w3-row.npz").files) == names
    assert not (out / "rtn-w3-row.hessians.npz").exists()
    # The saved weights are those the table's perplexity was measured with.
    ckpt = llama2c.read_checkpoint(checkpoint_path)
    heldout = tgm.heldout_windows(tokenizer_path, text_path, 32)[:2]
    quantized = _with_weights(ckpt, {name: weights[name] for name in weights.files})
    assert result["results"][1]["perplexity"] == pytest.approx(oracle.perplexity(quantized, heldout), rel=1e-6)


def test_command_line_rejects_bad_calibration(tmp_path, capsys):
    path = tmp_path / "bad.npy"
    np.save(path, np.full((2, 8), 600, dtype=np.int32))
    assert tgm.main(["--calibration", str(path), "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"torch_gptq_model: error: {path}: token ids must lie in [0, 512), got [600, 600]"]
