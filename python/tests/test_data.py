"""Corpus handling and the calib / perplexity commands' input checks."""

import numpy as np
import pytest

from gptq_mlir import data
from gptq_mlir.cli import main
from gptq_mlir.errors import GPTQError
from gptq_mlir.tokenizer import BOS, load_tokenizer


def test_paragraphs_and_fractions():
    text = "one\n\ntwo\nlines\n \nthree\n\n\n\nfour\n"
    paragraphs = data.split_paragraphs(text)
    assert paragraphs == ["one", "two\nlines", "three", "four"]
    assert data.select_fraction(paragraphs, 0.0, 0.5) == ["one", "two\nlines"]
    assert data.select_fraction(paragraphs, 0.5) == ["three", "four"]
    with pytest.raises(GPTQError, match="fractions"):
        data.select_fraction(paragraphs, 0.6, 0.5)


def test_corpus_starts_each_paragraph_with_bos(tokenizer_path, tmp_path):
    tok = load_tokenizer(tokenizer_path)
    path = tmp_path / "t.txt"
    path.write_text("Once upon a time.\n\nThe end.\n")
    stream = data.load_corpus(tok, path)
    assert stream.dtype == np.int32
    assert list(stream) == tok.encode("Once upon a time.") + tok.encode("The end.")
    assert list(stream).count(BOS) == 2


def test_windows():
    stream = np.arange(10, dtype=np.int32)
    np.testing.assert_array_equal(data.consecutive_windows(stream, 4), [[0, 1, 2, 3], [4, 5, 6, 7]])
    with pytest.raises(GPTQError, match="fewer than one window"):
        data.consecutive_windows(stream, 11)


def _calib(tokenizer, text, output, seed="0", extra=()):
    return main(
        ["calib", "--tokenizer", str(tokenizer), "--text", str(text), "--samples", "6",
         "--seqlen", "32", "--seed", seed, "-o", str(output), *extra]
    )


def test_calib_is_reproducible(tokenizer_path, text_path, tmp_path):
    assert _calib(tokenizer_path, text_path, tmp_path / "a.npy", extra=["--end-fraction", "0.8"]) == 0
    assert _calib(tokenizer_path, text_path, tmp_path / "b.npy", extra=["--end-fraction", "0.8"]) == 0
    assert _calib(tokenizer_path, text_path, tmp_path / "c.npy", seed="1", extra=["--end-fraction", "0.8"]) == 0
    a, b, c = (np.load(tmp_path / f"{n}.npy") for n in "abc")
    assert a.shape == (6, 32) and a.dtype == np.int32
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    stream = data.load_corpus(load_tokenizer(tokenizer_path), text_path, end_fraction=0.8)
    joined = stream.tobytes()
    for row in a:
        assert row.tobytes() in joined


def test_calib_rejects_wrong_tokenizer(checkpoint_path, text_path, tmp_path, capsys):
    assert _calib(checkpoint_path, text_path, tmp_path / "out.npy") == 1
    assert "not a llama2.c tokenizer" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("content", ["", "\n\n  \n\n"])
def test_calib_rejects_empty_text(tokenizer_path, tmp_path, capsys, content):
    text = tmp_path / "empty.txt"
    text.write_text(content)
    assert _calib(tokenizer_path, text, tmp_path / "out.npy") == 1
    assert "no text in the selected range" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == [text]


def test_calib_rejects_too_short_text(tokenizer_path, tmp_path, capsys):
    text = tmp_path / "short.txt"
    text.write_text("Once upon a time.")
    assert _calib(tokenizer_path, text, tmp_path / "out.npy") == 1
    assert "fewer than one window of 32" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == [text]


def test_perplexity_rejects_empty_text_and_wrong_tokenizer(stories_mlir, checkpoint_path, tokenizer_path, tmp_path, capsys):
    text = tmp_path / "empty.txt"
    text.write_text("")
    base = ["perplexity", "--model", str(stories_mlir), "--seqlen", "16"]
    assert main([*base, "--tokenizer", str(tokenizer_path), "--text", str(text)]) == 1
    assert "no text in the selected range" in capsys.readouterr().err
    assert main([*base, "--tokenizer", str(checkpoint_path), "--text", str(text)]) == 1
    assert "not a llama2.c tokenizer" in capsys.readouterr().err
