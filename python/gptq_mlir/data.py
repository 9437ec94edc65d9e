"""Text corpora as token streams: paragraphs, windows and calibration samples.

A corpus is a text file of paragraphs separated by blank lines (the
TinyStories layout). It is tokenized paragraph by paragraph, each paragraph
as BOS followed by its tokens (the dummy-prefix space included), and the
paragraphs are concatenated into one stream, as in the GPTQ paper's
evaluation protocol.
"""

import os
import re
from typing import List, Union

import numpy as np

from .errors import GPTQError
from .tokenizer import TextTokenizer

_BLANK_LINE = re.compile(r"\n[ \t\r]*\n")


def read_text(path: Union[str, os.PathLike]) -> str:
    """The UTF-8 text of ``path``; GPTQError if unreadable."""
    try:
        with open(path, "r", encoding="utf-8") as handle:
            return handle.read()
    except OSError as error:
        raise GPTQError(f"cannot read text {path}: {error.strerror}") from error
    except UnicodeDecodeError as error:
        raise GPTQError(f"{path} is not UTF-8 text: {error}") from error


def split_paragraphs(text: str) -> List[str]:
    """Non-empty paragraphs of ``text`` (separated by blank lines), stripped."""
    return [p.strip() for p in _BLANK_LINE.split(text) if p.strip()]


def select_fraction(paragraphs: List[str], start: float = 0.0, end: float = 1.0) -> List[str]:
    """Paragraphs ``[floor(n * start), floor(n * end))``.

    ``start=0.8`` selects the last fifth, ``end=0.8`` the first four fifths,
    so the two never overlap.
    """
    if not 0.0 <= start < end <= 1.0:
        raise GPTQError(f"fractions must satisfy 0 <= start < end <= 1, got {start} and {end}")
    count = len(paragraphs)
    return paragraphs[int(count * start) : int(count * end)]


def tokenize_paragraphs(tokenizer: TextTokenizer, paragraphs: List[str]) -> np.ndarray:
    """One int32 stream: for each paragraph (document), its tokens, with BOS
    before and EOS after them as the tokenizer says (llama2.c's: BOS only)."""
    stream: List[int] = []
    for paragraph in paragraphs:
        stream.extend(tokenizer.encode(paragraph, bos=tokenizer.add_bos, eos=tokenizer.add_eos))
    return np.asarray(stream, dtype=np.int32)


def load_corpus(
    tokenizer: TextTokenizer,
    path: Union[str, os.PathLike],
    start_fraction: float = 0.0,
    end_fraction: float = 1.0,
) -> np.ndarray:
    """Tokenize the selected paragraphs of the text file ``path``.

    Raises GPTQError when the selection holds no text.
    """
    paragraphs = select_fraction(split_paragraphs(read_text(path)), start_fraction, end_fraction)
    if not paragraphs:
        raise GPTQError(
            f"{path}: no text in the selected range "
            f"[{start_fraction}, {end_fraction}) of its paragraphs"
        )
    return tokenize_paragraphs(tokenizer, paragraphs)


def consecutive_windows(stream: np.ndarray, length: int) -> np.ndarray:
    """Consecutive non-overlapping windows ``[count, length]``; the tail is dropped."""
    if length < 2:
        raise GPTQError(f"window length must be at least 2, got {length}")
    count = len(stream) // length
    if count == 0:
        raise GPTQError(f"the text has {len(stream)} tokens, fewer than one window of {length}")
    return stream[: count * length].reshape(count, length)


def calibration_windows(stream: np.ndarray, samples: int, length: int, seed: int) -> np.ndarray:
    """``samples`` random windows of ``length`` tokens, ``[samples, length]`` int32.

    Window starts are drawn uniformly (with replacement) from every offset
    where a whole window fits, by ``numpy.random.default_rng(seed)``, so the
    same seed gives the same windows.
    """
    if samples <= 0 or length <= 0:
        raise GPTQError(f"samples and length must be positive, got {samples} and {length}")
    if len(stream) < length:
        raise GPTQError(f"the text has {len(stream)} tokens, fewer than one window of {length}")
    starts = np.random.default_rng(seed).integers(0, len(stream) - length + 1, size=samples)
    return np.stack([stream[s : s + length] for s in starts]).astype(np.int32)
