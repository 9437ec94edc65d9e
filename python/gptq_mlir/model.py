"""Language-model drivers over an imported module: logits, generation, perplexity.

The model runs through ``gptq-run`` (see :mod:`gptq_mlir.runner`); Python only
checks and prepares token ids and reads the logits back.
"""

import math
import os
import re
import sys
from pathlib import Path
from typing import Callable, List, Optional, TextIO, Union

import numpy as np

from . import runner
from .errors import GPTQError
from .importer import MODEL_ATTRIBUTE
from .tokenizer import BOS, EOS

_HEADER_LINES = 400
_INT_FIELD = re.compile(r"(\w+)\s*=\s*(-?\d+)\s*:\s*i64")


def read_model_attributes(path: Union[str, os.PathLike]) -> dict:
    """The ``gptq.model`` module attribute of the MLIR file at ``path``.

    Returns ``{}`` when the module has none (only ``seq_len`` and
    ``vocab_size`` checks are lost). The attribute is on the ``module`` line,
    which follows at most a few hundred lines of attribute aliases.
    """
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as handle:
            for _, line in zip(range(_HEADER_LINES), handle):
                if line.lstrip().startswith("module"):
                    start = line.find(MODEL_ATTRIBUTE + " = {")
                    if start < 0:
                        return {}
                    body = line[start : line.index("}", start)]
                    return {key: int(value) for key, value in _INT_FIELD.findall(body)}
    except OSError as error:
        raise GPTQError(f"cannot read model {path}: {error.strerror}") from error
    return {}


class Model:
    """An MLIR module with ``@forward(tokens [B, S] i32) -> logits [B, S, V] f32``."""

    def __init__(self, path: Union[str, os.PathLike]):
        self.path = Path(path)
        if not self.path.is_file():
            raise GPTQError(f"model {path} does not exist")
        attributes = read_model_attributes(self.path)
        self.seq_len: Optional[int] = attributes.get("seq_len")
        self.vocab_size: Optional[int] = attributes.get("vocab_size")

    def check_tokens(self, tokens: np.ndarray) -> np.ndarray:
        """``tokens`` as a ``[B, S]`` int32 array; GPTQError if it cannot be run."""
        tokens = np.asarray(tokens)
        if tokens.ndim != 2 or 0 in tokens.shape:
            raise GPTQError(f"tokens must be a non-empty [batch, seq] array, got shape {tokens.shape}")
        if self.seq_len is not None and tokens.shape[1] > self.seq_len:
            raise GPTQError(
                f"sequence of {tokens.shape[1]} tokens is longer than the model's "
                f"seq_len {self.seq_len}"
            )
        if tokens.min() < 0 or (self.vocab_size is not None and tokens.max() >= self.vocab_size):
            raise GPTQError(
                f"token ids must lie in [0, {self.vocab_size}), got "
                f"[{tokens.min()}, {tokens.max()}]"
            )
        return tokens.astype(np.int32)

    def logits(self, tokens: np.ndarray) -> np.ndarray:
        """Logits ``[B, S, V]`` for token ids ``[B, S]``, computed by gptq-run."""
        tokens = self.check_tokens(tokens)
        (logits,) = runner.run_function(self.path, [tokens], entry="forward")
        if logits.shape[:2] != tokens.shape:
            raise GPTQError(
                f"{self.path}: @forward returned shape {logits.shape} for tokens of shape {tokens.shape}"
            )
        return logits


def generate(
    model: Model,
    steps: int,
    prompt: Optional[List[int]] = None,
    on_token: Optional[Callable[[int, int], None]] = None,
) -> List[int]:
    """Greedy decoding: append the arg-max token ``steps`` times.

    Starts from ``prompt`` (default: BOS) and recomputes the whole prefix with
    one gptq-run call per step. Stops early at BOS or EOS (llama2.c's end of a
    story) or at the model's ``seq_len``. ``on_token(previous, token)`` is
    called for each new token. Returns the full sequence, prompt included.
    """
    tokens = list(prompt) if prompt else [BOS]
    for _ in range(steps):
        if model.seq_len is not None and len(tokens) >= model.seq_len:
            break
        logits = model.logits(np.asarray([tokens], dtype=np.int32))
        token = int(np.argmax(logits[0, -1]))
        if token in (BOS, EOS):
            break
        if on_token is not None:
            on_token(tokens[-1], token)
        tokens.append(token)
    return tokens


def window_nll(logits: np.ndarray, windows: np.ndarray) -> float:
    """Summed negative log-likelihood of tokens ``1..L-1`` of each window.

    ``logits[:, i]`` predicts ``windows[:, i + 1]``; computed in float64.
    """
    scores = logits[:, :-1].astype(np.float64)
    targets = windows[:, 1:]
    peak = scores.max(axis=-1, keepdims=True)
    log_norm = np.log(np.exp(scores - peak).sum(axis=-1)) + peak[..., 0]
    picked = np.take_along_axis(scores, targets[..., None].astype(np.int64), axis=-1)[..., 0]
    return float((log_norm - picked).sum())


def perplexity(
    model: Model,
    windows: np.ndarray,
    batch: int = 32,
    progress: Optional[TextIO] = sys.stderr,
) -> dict:
    """Perplexity ``exp(mean NLL)`` over ``windows`` ``[count, L]``.

    Every window runs from position 0; tokens 1..L-1 of each are predicted.
    Windows go to gptq-run ``batch`` at a time. Returns
    ``{"perplexity": ..., "tokens": <number of predicted tokens>}``.
    """
    if batch <= 0:
        raise GPTQError(f"batch must be positive, got {batch}")
    total = 0.0
    for start in range(0, len(windows), batch):
        chunk = windows[start : start + batch]
        total += window_nll(model.logits(chunk), chunk)
        if progress is not None:
            done = start + len(chunk)
            predicted = done * (windows.shape[1] - 1)
            print(
                f"perplexity: {done}/{len(windows)} windows, running {math.exp(total / predicted):.4f}",
                file=progress,
                flush=True,
            )
    count = windows.shape[0] * (windows.shape[1] - 1)
    return {"perplexity": math.exp(total / count), "tokens": count}
