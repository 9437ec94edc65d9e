"""Language-model drivers over an imported module: logits, generation, perplexity.

The model runs in this process, compiled once by the project's JIT (see
:mod:`gptq_mlir.native`); Python only checks and prepares token ids and
reads the logits back.
"""

import math
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any, Callable, Collection, Dict, List, Optional, TextIO, Union

import numpy as np

from . import runner
from .errors import GPTQError
from .tokenizer import BOS, EOS


#: The module attribute that names a model's parameter archives (see
#: :mod:`gptq_mlir.importer`), as written in MLIR text: a string, or an array
#: of strings.
_PARAMETERS = re.compile(rb'gptq\.parameters\s*=\s*("(?:[^"\\]|\\.)*"|\[[^\]]*\])')
_STRING = re.compile(rb'"((?:[^"\\]|\\.)*)"')
#: How much of a module's text is searched for its attributes: they open the
#: module, after at most the printer's aliases.
_HEADER_BYTES = 1 << 24


def parameter_archives(path: Union[str, os.PathLike]) -> List[Path]:
    """The parameter archives that the MLIR module at ``path`` names in its
    ``gptq.parameters`` attribute (relative to the module's folder); for a
    safetensors index, the index and the shards it lists. Empty when it
    names none, cannot be read, is not a regular file or is bytecode. Read
    from the module's text up to its ``module`` line, so a large module is
    not read whole."""
    try:
        # Without blocking: opening a FIFO to read waits for a writer.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with open(descriptor, "rb") as handle:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                return []
            read = 0
            while read < _HEADER_BYTES:
                line = handle.readline(_HEADER_BYTES - read)
                if not line or line.startswith(b"ML\xefR"):
                    return []
                read += len(line)
                if line.lstrip().startswith(b"module"):
                    match = _PARAMETERS.search(line)
                    break
            else:
                return []
    except OSError:
        return []
    if match is None:
        return []
    files = []
    for literal in _STRING.findall(match.group(1)):
        archive = Path(path).parent / os.fsdecode(_ESCAPE.sub(_unescape, literal))
        files.append(archive)
        if archive.name.endswith(".json"):
            files.extend(_shards(archive))
    return files


def _shards(index: Path) -> List[Path]:
    """The shards a safetensors index lists (none when it cannot be read:
    the tools that read it say why)."""
    from . import inputs

    try:
        weight_map = inputs.load_json(index, "index").get("weight_map")
        names = sorted({name for name in weight_map.values() if isinstance(name, str) and Path(name).name == name})
    except (GPTQError, AttributeError):
        return []
    return [index.parent / name for name in names]


#: An escape in an MLIR string: two hexadecimal digits, or a character.
_ESCAPE = re.compile(rb"\\([0-9A-Fa-f]{2}|.)", re.DOTALL)


def _unescape(match: "re.Match[bytes]") -> bytes:
    code = match.group(1)
    if len(code) == 2:
        return bytes([int(code, 16)])
    return {b"n": b"\n", b"t": b"\t"}.get(code, code)


def read_model_attributes(path: Union[str, os.PathLike]) -> dict:
    """The ``gptq.model`` module attribute of the MLIR file at ``path``.

    Read by parsing (and so verifying) the module without compiling it, as
    ``gptq-run --describe`` does. Returns ``{}`` when the module has none
    (only the ``seq_len`` and ``vocab_size`` checks are lost), else its keys
    as ints: ``dim``, ``hidden_dim``, ``n_heads``, ``n_kv_heads``,
    ``n_layers``, ``seq_len``, ``vocab_size``, and ``head_dim`` when the
    model states one.
    """
    return runner.describe(path)["model"] or {}


def _signature(specs: List[Dict[str, Any]]) -> str:
    def one(spec: Dict[str, Any]) -> str:
        sizes = ", ".join("?" if size is None else str(size) for size in spec["shape"])
        return f"{spec['dtype']} [{sizes}]"

    return "(" + ", ".join(one(spec) for spec in specs) + ")"


def _check_forward(path: Path, description: Dict[str, Any]) -> None:
    """GPTQError unless ``@forward`` maps int32 ``[B, S]`` to one float32 ``[B, S, V]``."""
    functions = {function["name"]: function for function in description["functions"]}
    forward = functions.get("forward")
    if forward is None:
        names = ", ".join(f"@{name}" for name in functions) or "none"
        raise GPTQError(f"{path} has no public function @forward (entry functions: {names})")
    if "error" in forward:
        raise GPTQError(f"{path}: {forward['error']}")
    inputs, results = forward["inputs"], forward["results"]
    if [(spec["dtype"], len(spec["shape"])) for spec in inputs] != [("int32", 2)] or [
        (spec["dtype"], len(spec["shape"])) for spec in results
    ] != [("float32", 3)]:
        raise GPTQError(
            f"{path}: expected @forward to take token ids int32 [batch, seq] and return "
            f"logits float32 [batch, seq, vocab], found {_signature(inputs)} -> {_signature(results)}"
        )


class Model:
    """An MLIR module with ``@forward(tokens [B, S] i32) -> logits [B, S, V] f32``.

    Opening one parses the module (no compilation): GPTQError if it does not verify or has no such
    ``@forward``. ``seq_len`` and ``vocab_size`` come from its ``gptq.model``
    attribute, None when it has none.
    """

    def __init__(self, path: Union[str, os.PathLike]):
        self.path = Path(path)
        if not self.path.is_file():
            raise GPTQError(f"model {path} does not exist")
        description = runner.describe(self.path)
        _check_forward(self.path, description)
        attributes = description["model"] or {}
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
        """Logits ``[B, S, V]`` for token ids ``[B, S]``: ``@forward`` compiled on
        the first call in the process, then called in place."""
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
    stop: Collection[int] = (BOS, EOS),
) -> List[int]:
    """Greedy decoding: append the arg-max token ``steps`` times.

    Starts from ``prompt`` (default: llama2.c's BOS) and recomputes the whole
    prefix with one call of ``@forward`` per step. Stops early at a token of
    ``stop`` (default llama2.c's BOS and EOS, the end of a story; a
    tokenizer's ``stop_ids``) or at the model's ``seq_len``.
    ``on_token(previous, token)`` is called for each new token. Returns the
    full sequence, prompt included.
    """
    tokens = list(prompt) if prompt else [BOS]
    for _ in range(steps):
        if model.seq_len is not None and len(tokens) >= model.seq_len:
            break
        logits = model.logits(np.asarray([tokens], dtype=np.int32))
        token = int(np.argmax(logits[0, -1]))
        if token in stop:
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
    Windows go to ``@forward`` ``batch`` at a time. Returns
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
