"""Corpus handling and the calib / perplexity commands' input checks."""

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import assert_one_line_error
from gptq_mlir.cli.commands import main
from gptq_mlir.data import corpus
from gptq_mlir.data.tokenizer import BOS, load_tokenizer
from gptq_mlir.errors import GPTQError


def test_paragraphs_and_fractions():
    text = "one\n\ntwo\nlines\n \nthree\n\n\n\nfour\n"
    paragraphs = corpus.split_paragraphs(text)
    assert paragraphs == ["one", "two\nlines", "three", "four"]
    assert corpus.select_fraction(paragraphs, 0.0, 0.5) == ["one", "two\nlines"]
    assert corpus.select_fraction(paragraphs, 0.5) == ["three", "four"]
    with pytest.raises(GPTQError, match="fractions"):
        corpus.select_fraction(paragraphs, 0.6, 0.5)


def test_corpus_starts_each_paragraph_with_bos(tokenizer_path, tmp_path):
    tok = load_tokenizer(tokenizer_path)
    path = tmp_path / "t.txt"
    path.write_text("Once upon a time.\n\nThe end.\n")
    stream = corpus.load_corpus(tok, path)
    assert stream.dtype == np.int32
    assert list(stream) == tok.encode("Once upon a time.") + tok.encode("The end.")
    assert list(stream).count(BOS) == 2


def test_windows():
    stream = np.arange(10, dtype=np.int32)
    np.testing.assert_array_equal(corpus.consecutive_windows(stream, 4), [[0, 1, 2, 3], [4, 5, 6, 7]])
    with pytest.raises(GPTQError, match="fewer than one window"):
        corpus.consecutive_windows(stream, 11)


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
    stream = corpus.load_corpus(load_tokenizer(tokenizer_path), text_path, end_fraction=0.8)
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


def test_texts_are_bounded(tokenizer_path, tmp_path, monkeypatch):
    """A 2 GiB sparse text is refused by its size, and a NUL-filled one by
    its first chunk, each in one line within seconds (in a fresh process,
    so that a text read whole fails the test by its timeout, not by
    hanging it); JSON lines and parquet have the same limits, a document
    too long for a tokenizer and a NUL character in one are errors naming
    it, and a long tokenization prints progress."""
    huge, zeros = tmp_path / "huge.txt", tmp_path / "zeros.txt"
    for path, size in ((huge, 2 << 30), (zeros, 64 << 20)):
        with open(path, "wb") as handle:
            handle.truncate(size)
    env = dict(os.environ, PYTHONPATH=str(Path(corpus.__file__).parents[2]))
    started = time.monotonic()
    for path, message in (
        (huge, f"{huge}: the text is {2 << 30} bytes, more than the {1 << 30} bytes (1 GiB) a text may hold; "
               "split it into smaller files"),
        (zeros, f"{zeros}: a NUL byte at character 0: not a text file"),
    ):
        result = subprocess.run(
            [sys.executable, "-m", "gptq_mlir", "calib", "--tokenizer", str(tokenizer_path), "--text", str(path),
             "--samples", "1", "--seqlen", "4", "-o", str(tmp_path / "out.npy")],
            capture_output=True, text=True, env=env, timeout=30,
        )
        assert result.stderr == f"gptq_mlir: error: {message}\n"
        assert_one_line_error(result)
    assert time.monotonic() - started < 30
    assert not (tmp_path / "out.npy").exists()

    tok = load_tokenizer(tokenizer_path)
    monkeypatch.setattr(corpus, "MAX_DOCUMENT_CHARS", 40)
    text = tmp_path / "long.txt"
    text.write_text("Short.\n\n" + "A paragraph longer than forty characters in all.\n")
    with pytest.raises(GPTQError, match=r"long.txt: paragraph 2 holds 48 characters, more than the 40 a document"):
        corpus.load_corpus(tok, text)
    records = tmp_path / "docs.jsonl"
    records.write_text('{"text": "One."}\n{"text": "T\\u0000o"}\n')
    with pytest.raises(GPTQError, match=r"docs.jsonl: line 2 holds a NUL character \(at character 1\): not text"):
        corpus.load_corpus(tok, records)
    monkeypatch.setattr(corpus, "MAX_TEXT_BYTES", 16)
    with pytest.raises(GPTQError, match=r"docs.jsonl: the text is 38 bytes, more than the 16 bytes a text"):
        corpus.load_corpus(tok, records)

    monkeypatch.setattr(corpus, "MAX_TEXT_BYTES", 1 << 30)
    monkeypatch.setattr(corpus, "PROGRESS_SECONDS", 0.0)
    text.write_text("Once upon a time.\n\nThe end.\n")
    progress = io.StringIO()
    expected = tok.encode("Once upon a time.") + tok.encode("The end.")
    assert list(corpus.load_corpus(tok, text, progress=progress)) == expected
    assert progress.getvalue().splitlines()[-1] == (
        f"tokenizing {text}: 2 of 2 documents, 100% of the characters, {len(expected)} tokens"
    )
