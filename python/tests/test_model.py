"""The imported model run by gptq-run against the PyTorch oracle.

Tests here that execute a model need build/bin/gptq-run (or $GPTQ_RUN) and
skip only when it is not built.
"""

import json
import os
import re

import numpy as np
import pytest

import oracle
from conftest import synthetic_checkpoint, write_checkpoint
from gptq_mlir.cli.commands import main
from gptq_mlir.data import corpus
from gptq_mlir.data.tokenizer import BOS, load_tokenizer
from gptq_mlir.errors import GPTQError
from gptq_mlir.importers import emitter, llama2c
from gptq_mlir.runtime.model import Model, window_nll

SAMPLE = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park."


def assert_close(got, want, rel=1e-4):
    """Agreement to ``rel`` relative to the largest magnitude of ``want``."""
    assert got.shape == want.shape
    error = np.abs(got - want).max() / np.abs(want).max()
    assert error <= rel, f"relative error {error:.3g} > {rel}"


@pytest.fixture(scope="module")
def stories_run(gptq_run, stories_mlir, tokenizer_path):
    """One gptq-run call on stories260K: the greedy sample and random tokens."""
    sample = load_tokenizer(tokenizer_path).encode(SAMPLE)
    tokens = np.stack([sample, np.random.default_rng(1).integers(0, 512, size=len(sample))])
    tokens[:, 0] = BOS
    tokens = tokens.astype(np.int32)
    return tokens, Model(stories_mlir).logits(tokens)


def test_stories260k_logits(stories_run, checkpoint_path):
    tokens, logits = stories_run
    assert_close(logits, oracle.forward(llama2c.read_checkpoint(checkpoint_path), tokens))


def test_greedy_sample(stories_run):
    """Greedy decoding from BOS yields the published sample.

    Logits at position i depend only on tokens 0..i, so one run over BOS +
    the sample checks every step of greedy decoding: each arg-max must be the
    sample's next token.
    """
    tokens, logits = stories_run
    np.testing.assert_array_equal(logits[0, :-1].argmax(-1), tokens[0, 1:])


@pytest.mark.parametrize(
    "version, kwargs",
    [
        (0, {}),
        (1, {"n_kv_heads": 4}),
        (0, {"n_kv_heads": 2, "n_layers": 3, "dim": 24, "n_heads": 2, "shared_classifier": False}),
        (1, {"n_heads": 4, "n_kv_heads": 1, "shared_classifier": False}),
    ],
)
def test_synthetic_logits(gptq_run, tmp_path, version, kwargs):
    ckpt = synthetic_checkpoint(seed=version, **kwargs)
    source = write_checkpoint(tmp_path / "model.bin", ckpt, version)
    parsed = llama2c.read_checkpoint(source)
    output = tmp_path / "model.mlir"
    emitter.write_module(parsed, output)
    rng = np.random.default_rng(2)
    tokens = rng.integers(0, ckpt.config.vocab_size, size=(3, ckpt.config.seq_len)).astype(np.int32)
    assert_close(Model(output).logits(tokens), oracle.forward(ckpt, tokens))


def test_shape_generic(gptq_run, tmp_path):
    """One module runs batches and sequence lengths of any size up to seq_len."""
    ckpt = synthetic_checkpoint(seed=7)
    output = tmp_path / "model.mlir"
    emitter.write_module(ckpt, output)
    model = Model(output)
    for shape in [(1, 1), (2, 5)]:
        tokens = np.random.default_rng(8).integers(0, ckpt.config.vocab_size, size=shape).astype(np.int32)
        assert_close(model.logits(tokens), oracle.forward(ckpt, tokens))


def test_generate_command(gptq_run, stories_mlir, tokenizer_path, capsys):
    assert main(["generate", "--model", str(stories_mlir), "--tokenizer", str(tokenizer_path), "--steps", "2"]) == 0
    out = capsys.readouterr()
    assert out.out == "Once upon\n"
    assert out.err == ""
    assert main(["generate", "--model", str(stories_mlir), "--tokenizer", str(tokenizer_path), "--steps", "2",
                 "--verbose"]) == 0
    out = capsys.readouterr()
    assert out.out == "Once upon\n"
    assert re.search(r"generate: 2/2 tokens, [0-9.]+ tokens/s", out.err), out.err


def test_perplexity_matches_oracle(gptq_run, stories_mlir, checkpoint_path, tokenizer_path, text_path, capsys):
    args = ["--tokenizer", str(tokenizer_path), "--text", str(text_path), "--start-fraction", "0.99"]
    code = main(["perplexity", "--model", str(stories_mlir), *args, "--seqlen", "64", "--batch", "32"])
    assert code == 0
    out = capsys.readouterr()
    result = json.loads(out.out.strip().splitlines()[-1])
    stream = corpus.load_corpus(load_tokenizer(tokenizer_path), text_path, start_fraction=0.99)
    windows = corpus.consecutive_windows(stream, 64)
    assert result["tokens"] == windows.shape[0] * 63
    want = oracle.perplexity(llama2c.read_checkpoint(checkpoint_path), windows)
    assert result["perplexity"] == pytest.approx(want, rel=1e-4)
    assert 2.0 < want < 20.0
    assert "windows" in out.err


def test_window_nll_matches_torch():
    import torch

    rng = np.random.default_rng(3)
    logits = rng.standard_normal((2, 5, 7)).astype(np.float32) * 4
    windows = rng.integers(0, 7, size=(2, 5))
    want = torch.nn.functional.cross_entropy(
        torch.from_numpy(logits[:, :-1]).double().reshape(-1, 7),
        torch.from_numpy(windows[:, 1:]).reshape(-1),
        reduction="sum",
    ).item()
    assert window_nll(logits, windows) == pytest.approx(want, rel=1e-12)


def test_sequence_longer_than_seq_len(gptq_run, stories_mlir):
    model = Model(stories_mlir)
    with pytest.raises(GPTQError, match="sequence of 513 tokens is longer than the model's seq_len 512"):
        model.check_tokens(np.ones((1, 513), dtype=np.int32))
    with pytest.raises(GPTQError, match=r"token ids must lie in \[0, 512\)"):
        model.check_tokens(np.full((1, 4), 512))


def test_missing_library_is_a_clear_error(stories_mlir, tokenizer_path, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("GPTQ_CAPI_LIB", str(tmp_path / "no-libGPTQCAPI.so"))
    code = main(["generate", "--model", str(stories_mlir), "--tokenizer", str(tokenizer_path), "--steps", "1"])
    assert code == 1
    err = capsys.readouterr().err
    assert "libGPTQCAPI.so not found at $GPTQ_CAPI_LIB=" in err
    assert "cmake --build build --target GPTQCAPI" in err


def test_build_dir_variable_finds_the_library(stories_mlir, tokenizer_path, monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("GPTQ_CAPI_LIB", raising=False)
    monkeypatch.setenv("GPTQ_MLIR_BUILD_DIR", str(tmp_path))
    code = main(["generate", "--model", str(stories_mlir), "--tokenizer", str(tokenizer_path), "--steps", "1"])
    assert code == 1
    err = capsys.readouterr().err
    assert f"libGPTQCAPI.so not found at {tmp_path}/lib/libGPTQCAPI.so ($GPTQ_MLIR_BUILD_DIR={tmp_path})" in err
    assert "set $GPTQ_MLIR_BUILD_DIR to the build folder" in err


def test_model_paths_that_are_not_files(tmp_path):
    """A missing model and one that is a device, a FIFO or a folder are
    told apart, each one line, before the C interface opens anything."""
    with pytest.raises(GPTQError, match="does not exist"):
        Model(tmp_path / "missing.mlir")
    fifo = tmp_path / "m.fifo"
    os.mkfifo(fifo)
    for path in ("/dev/zero", fifo, tmp_path):
        with pytest.raises(GPTQError, match="is not a regular file"):
            Model(path)
