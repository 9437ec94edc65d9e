"""Language-model drivers over an imported module: logits, generation, perplexity.

The model runs in this process, compiled once by the project's JIT (see
:mod:`gptq_mlir.runtime.native`); Python only checks and prepares token ids and
reads the logits back.
"""

import math
import os
import sys
from pathlib import Path
from typing import Any, Callable, Collection, Dict, List, Optional, TextIO, Tuple, Union

import numpy as np

from . import native, runner
from ..data.tokenizer import BOS, EOS
from ..errors import GPTQError


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


def _cache_shape(description: Dict[str, Any]) -> Optional[Tuple[int, int, int]]:
    """``(layers, kv heads, head size)`` of the KV caches when the module has
    ``@prefill`` and ``@decode`` as the importers write them (see
    :data:`gptq_mlir.importers.emitter.ENTRIES`); None otherwise."""
    functions = {function["name"]: function for function in description["functions"]}
    prefill, decode = functions.get("prefill"), functions.get("decode")
    if prefill is None or decode is None or "error" in prefill or "error" in decode:
        return None
    expected = {
        "prefill": [("tensor", "int32", 2), ("memref", "float32", 5), ("memref", "float32", 5)],
        "decode": [("tensor", "int32", 1), ("scalar", "int64", 0), ("memref", "float32", 5), ("memref", "float32", 5)],
    }
    for name, function in (("prefill", prefill), ("decode", decode)):
        found = [(spec["kind"], spec["dtype"], len(spec["shape"])) for spec in function["inputs"]]
        results = [(spec["dtype"], len(spec["shape"])) for spec in function["results"]]
        if found != expected[name] or results != [("float32", 2)]:
            return None
    shape = prefill["inputs"][1]["shape"]
    if None in (shape[0], shape[2], shape[4]) or any(spec["shape"] != shape for spec in
                                                     prefill["inputs"][1:] + decode["inputs"][2:]):
        return None
    return shape[0], shape[2], shape[4]


def _old_cache_layout(description: Dict[str, Any]) -> bool:
    """Whether ``@prefill`` takes the caches as modules imported before
    2026-12-04 do, ``[layers, batch, positions, kv heads, head size]``."""
    prefill = {function["name"]: function for function in description["functions"]}.get("prefill")
    if prefill is None or "error" in prefill or len(prefill["inputs"]) != 3:
        return False
    shape = prefill["inputs"][1]["shape"]
    return len(shape) == 5 and shape[2] is None and None not in (shape[0], shape[3], shape[4])


class Model:
    """An MLIR module with ``@forward(tokens [B, S] i32) -> logits [B, S, V] f32``,
    and, when the importers wrote it, ``@prefill`` and ``@decode`` over KV
    caches (:attr:`cache_shape`).

    Opening one parses the module (no compilation): GPTQError if it does not verify or has no such
    ``@forward``. ``seq_len`` and ``vocab_size`` come from its ``gptq.model``
    attribute, None when it has none. Entries are compiled on their first
    call in the process and kept (:mod:`gptq_mlir.runtime.native`).
    """

    def __init__(self, path: Union[str, os.PathLike]):
        self.path = Path(path)
        if not self.path.exists():
            raise GPTQError(f"model {path} does not exist")
        if not self.path.is_file():
            raise GPTQError(f"model {path} is not a regular file (a folder, a device or a pipe)")
        # Parsed once; its entries are compiled on first use and kept.
        self._module = native.open_module(self.path)
        description = self._module.describe()
        _check_forward(self.path, description)
        attributes = description["model"] or {}
        self.seq_len: Optional[int] = attributes.get("seq_len")
        self.vocab_size: Optional[int] = attributes.get("vocab_size")
        #: ``(layers, kv heads, head size)`` of the KV caches of ``@prefill``
        #: and ``@decode``; None when the module has no such entries.
        self.cache_shape = _cache_shape(description)
        self._old_caches = self.cache_shape is None and _old_cache_layout(description)

    def new_caches(self, batch: int, positions: int) -> Tuple[np.ndarray, np.ndarray]:
        """Zeroed key and value caches ``[layers, batch, kv heads, positions,
        head size]`` for :meth:`prefill` and :meth:`decode`."""
        if self._old_caches:
            raise GPTQError(
                f"{self.path} takes its KV caches as [layers, batch, positions, kv heads, head size], as modules "
                "imported before 2026-12-04 do; the importers now write [layers, batch, kv heads, positions, "
                "head size]: re-import it to generate with a KV cache"
            )
        if self.cache_shape is None:
            raise GPTQError(f"{self.path} has no @prefill and @decode: re-import it to generate with a KV cache")
        layers, heads, size = self.cache_shape
        shape = (layers, batch, heads, positions, size)
        return np.zeros(shape, np.float32), np.zeros(shape, np.float32)

    def prefill(self, tokens: np.ndarray, caches: Tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """Logits ``[B, V]`` of the last position of ``tokens`` ``[B, S]``;
        their keys and values written to positions ``0 .. S - 1`` of
        ``caches`` (in place)."""
        tokens = self.check_tokens(tokens)
        (logits,) = self._module.call("prefill", [tokens, *caches])
        return self._check_logits_shape("prefill", logits, tokens, tokens.shape[:1])

    def decode(self, tokens: np.ndarray, position: int, caches: Tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """Logits ``[B, V]`` of one token per sequence (``tokens`` ``[B]``) at
        ``position``, which reads the caches' positions before it and
        writes its own key and value there (in place)."""
        tokens = self.check_tokens(np.asarray(tokens).reshape(-1, 1))[:, 0]
        (logits,) = self._module.call("decode", [tokens, np.array(position, np.int64), *caches])
        return self._check_logits_shape("decode", logits, tokens, tokens.shape)

    def check_context(self, length: int, what: str) -> None:
        """GPTQError naming ``what`` when ``length`` tokens do not fit the
        model's context (its ``seq_len``; no check without one)."""
        if self.seq_len is not None and length > self.seq_len:
            raise GPTQError(f"{what} is {length} tokens; the model's context is {self.seq_len} (seq_len)")

    def check_prompt(self, length: int) -> None:
        """GPTQError unless a prompt of ``length`` tokens leaves room in the
        model's context for a token to generate."""
        self.check_context(length, "the prompt")
        if self.seq_len is not None and length == self.seq_len:
            raise GPTQError(
                f"the prompt is {length} tokens, the whole of the model's context ({self.seq_len}, seq_len): "
                "no room is left for a token to generate"
            )

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
        (logits,) = self._module.call("forward", [tokens])
        return self._check_logits_shape("forward", logits, tokens, tokens.shape)

    def _check_logits_shape(
        self, entry: str, logits: np.ndarray, tokens: np.ndarray, rows: Tuple[int, ...]
    ) -> np.ndarray:
        """``logits`` when they are ``rows`` by the vocabulary (``vocab_size``;
        without one, wide enough for every id of ``tokens``); GPTQError
        naming ``entry`` otherwise. The signature fixes only the rank: a
        module edited by hand may compute other sizes, which would give
        tokens outside the vocabulary or no row to pick from."""
        width = self.vocab_size
        fits = logits.shape[-1] == width if width is not None else logits.shape[-1] > int(tokens.max())
        if logits.shape[:-1] != rows or not fits:
            expected = f"[{', '.join(map(str, rows))}, {width if width is not None else 'vocab'}]"
            if width is None:
                expected += f" with vocab > {int(tokens.max())}, the largest token id"
            raise GPTQError(
                f"{self.path}: @{entry} returned logits of shape {list(logits.shape)} for tokens of shape "
                f"{list(tokens.shape)}, expected {expected}"
            )
        return logits


def _nonfinite(values: np.ndarray) -> Optional[str]:
    """What is not finite in ``values`` ("NaN", "+Inf", ...), None when all is."""
    bad = ~np.isfinite(values)
    if not bad.any():
        return None
    found = values[bad]
    kinds = [name for name, hit in (("NaN", np.isnan(found).any()), ("+Inf", (found == np.inf).any()),
                                    ("-Inf", (found == -np.inf).any())) if hit]
    return f"{int(bad.sum())} of {values.size} values are {', '.join(kinds)}"


def check_logits(logits: np.ndarray, where: str) -> None:
    """GPTQError starting with ``where`` when any of ``logits`` is NaN or
    infinite: no token or probability can be read from them."""
    found = _nonfinite(logits)
    if found is not None:
        raise GPTQError(
            f"{where}: the model's logits are not finite ({found}); its weights or activations "
            "overflow or hold NaN"
        )


class Sampler:
    """How the next token is picked from a position's logits: the arg-max
    (``temperature`` 0, the default), or a draw from ``softmax(logits /
    temperature)`` restricted to the most likely tokens whose probabilities
    sum to ``top_p`` (nucleus sampling), from a generator seeded with
    ``seed``, so that a run repeats.

    Logits that are not all finite are a GPTQError, never a pick. The
    softmax is computed from ``logits - max``, so that no temperature, however
    small (a subnormal one included), overflows: scores that the division
    sends to -inf get probability 0, and the most likely tokens share all of
    it, the arg-max's limit."""

    def __init__(self, temperature: float = 0.0, top_p: float = 1.0, seed: int = 0):
        if not (temperature >= 0 and math.isfinite(temperature)):
            raise GPTQError(f"temperature must be a finite number >= 0, got {temperature}")
        if not (0 < top_p <= 1):
            raise GPTQError(f"top-p must lie in (0, 1], got {top_p}")
        if seed < 0:
            raise GPTQError(f"the seed must be an integer >= 0, got {seed}")
        self.temperature, self.top_p = temperature, top_p
        self.rng = np.random.default_rng(seed)

    def __call__(self, logits: np.ndarray) -> int:
        logits = np.asarray(logits)
        check_logits(logits, "cannot pick a token")
        if self.temperature == 0:
            return int(np.argmax(logits))
        shifted = logits.astype(np.float64) - float(logits.max())
        with np.errstate(over="ignore", under="ignore"):
            # <= 0 everywhere; a tiny temperature sends all but the maxima to -inf.
            probs = np.exp(shifted / self.temperature)
        probs /= probs.sum()
        order = np.argsort(-probs, kind="stable")
        if self.top_p < 1:
            cumulative = np.cumsum(probs[order])
            keep = int(np.searchsorted(cumulative, self.top_p)) + 1
            order = order[:keep]
        picked = probs[order] / probs[order].sum()
        return int(order[self.rng.choice(len(order), p=picked)])


def generate(
    model: Model,
    steps: int,
    prompt: Optional[List[int]] = None,
    on_token: Optional[Callable[[int, int], None]] = None,
    stop: Collection[int] = (BOS, EOS),
    sampler: Optional[Sampler] = None,
    use_cache: Optional[bool] = None,
) -> List[int]:
    """Append up to ``steps`` tokens, each picked by ``sampler`` (default:
    the arg-max) from the logits of the last position.

    Starts from ``prompt`` (default: llama2.c's BOS). With a KV cache (the
    default when the module has ``@prefill`` and ``@decode``; ``use_cache``
    False forces the other way), the prompt runs once through ``@prefill``
    and each new token through ``@decode``, which computes that token only;
    without, each step recomputes the whole prefix with ``@forward``. Both
    give the same tokens. Stops early at a token of ``stop`` (default
    llama2.c's BOS and EOS, the end of a story; a tokenizer's
    ``stop_ids``) or at the model's ``seq_len``, the size of the KV caches
    too. ``on_token(previous, token)`` is called for each new token as it is
    made. Returns the full sequence, prompt included.

    GPTQError when the prompt leaves no room in the model's context (at
    least one token must fit after it), and when a position's logits are
    not finite (naming the position): a NaN has no arg-max.
    """
    sampler = sampler or Sampler()
    tokens = list(prompt) if prompt else [BOS]
    model.check_prompt(len(tokens))
    limit = len(tokens) + steps
    if model.seq_len is not None:
        limit = min(limit, model.seq_len)
    if len(tokens) >= limit:
        return tokens
    cached = model.cache_shape is not None if use_cache is None else use_cache
    if cached:
        caches = model.new_caches(1, limit)
        logits = model.prefill(np.asarray([tokens], dtype=np.int32), caches)[0]
    while True:
        if not cached:
            logits = model.logits(np.asarray([tokens], dtype=np.int32))[0, -1]
        check_logits(logits, f"{model.path}: token position {len(tokens) - 1}")
        token = sampler(logits)
        if token in stop:
            break
        if on_token is not None:
            on_token(tokens[-1], token)
        tokens.append(token)
        if len(tokens) >= limit:
            break
        if cached:
            logits = model.decode(np.asarray([token], dtype=np.int32), len(tokens) - 1, caches)[0]
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
    name: Optional[str] = None,
) -> dict:
    """Perplexity ``exp(mean NLL)`` over ``windows`` ``[count, L]``.

    Every window runs from position 0; tokens 1..L-1 of each are predicted.
    Windows go to ``@forward`` ``batch`` at a time. Returns
    ``{"perplexity": ..., "tokens": <number of predicted tokens>}``.
    GPTQError, naming the model (``name``, default its path), the window
    and the position, when logits that predict a token are not finite, and
    when the perplexity overflows a float64 (a mean NLL above 709 nats).
    """
    if batch <= 0:
        raise GPTQError(f"batch must be positive, got {batch}")
    if windows.ndim != 2 or windows.shape[0] == 0 or windows.shape[1] < 2:
        raise GPTQError(
            f"windows must be [count, length] with at least one window of at least 2 tokens (one to predict), "
            f"got shape {windows.shape}"
        )
    name = str(model.path) if name is None else name
    length = windows.shape[1]
    total = 0.0
    for start in range(0, len(windows), batch):
        chunk = windows[start : start + batch]
        logits = model.logits(chunk)
        # The last position's logits predict nothing.
        bad = ~np.isfinite(logits[:, :-1]).all(axis=-1)
        if bad.any():
            window, position = (int(i) for i in np.argwhere(bad)[0])
            check_logits(
                logits[window, position],
                f"{name}: window {start + window + 1} of {len(windows)}, token position {position}",
            )
        total += window_nll(logits, chunk)
        if progress is not None:
            done = start + len(chunk)
            predicted = done * (length - 1)
            print(
                f"perplexity: {done}/{len(windows)} windows, running {_exp(total / predicted):.4f}",
                file=progress,
                flush=True,
            )
    count = windows.shape[0] * (length - 1)
    mean = total / count
    if _exp(mean) == math.inf:
        raise GPTQError(
            f"{name}: the mean negative log-likelihood is {mean:.6g} nats per token, so its perplexity "
            "exp(mean) overflows a float64"
        )
    return {"perplexity": math.exp(mean), "tokens": count}


def _exp(value: float) -> float:
    """``math.exp``, inf where it would overflow."""
    try:
        return math.exp(value)
    except OverflowError:
        return math.inf
