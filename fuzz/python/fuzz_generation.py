"""Fuzzes generation and evaluation (gptq_mlir.runtime.model's Sampler, generate
and perplexity, and the generate and perplexity commands) with atheris, on
a stand-in for a compiled model.

The stand-in is a real ``Model`` whose compiled module is replaced by a
small Python object with the module's ``call(entry, inputs)``: it answers
``@forward``, ``@prefill`` and ``@decode`` with logits made from the input's
bytes (finite values, NaN, +-Inf, float32's largest, subnormals, all equal,
...), the same logits for a token at a position whichever entry computes
them, and, when the input asks, results of the entry's rank but another
shape (another vocabulary width, another row count), as a module edited by
hand could return. Its token ids are checked as the compiled code checks
them (GPTQError), and every call must keep to the protocol: int32 tokens,
caches of the model's layout, a decode position inside the caches.

Each input is one of five cases (its first byte): the sampler on one row
of logits; ``generate`` with and without the KV cache; ``perplexity``
over windows; and the ``generate`` and ``perplexity`` commands through
``commands.main`` (the stand-in in place of the module, stories260K's tokenizer,
a short text) with arguments spelled as on a command line. Arguments
range over what the API and the command line take and what they must
refuse: temperatures 0, subnormal, huge, negative, NaN and infinite; top-p
inside (0, 1] and outside it; seeds from 0 to 2^128 and negative; steps
from negative to 2^31; prompts and windows of lengths around the model's
context (seq_len, which may be unknown), empty, with ids inside and outside
the vocabulary.

Invariants: every call returns tokens inside the vocabulary (generated
after the prompt, at most ``steps`` and within the context; with the cache
and without, the same) or a finite perplexity over the predicted tokens, or
raises GPTQError; a command exits 0, or 1 with one line ``gptq_mlir: error:
...`` that is no internal error. NumPy's RuntimeWarnings are errors
(``warnings.simplefilter("error")``). Anything else is a finding.

    .venv/bin/python fuzz/python/fuzz_generation.py [libFuzzer options] [CORPUS...]

scripts/fuzz.sh runs it with the seeds of fuzz/python/corpus/generation
(written by fuzz/python/make_seeds.py, which spells the input format below).

Input format: bytes read in order, 0 once the input is used up.

    case      1 byte: % 5 = sampler, generate, perplexity, generate command, perplexity command
    model     4 bytes: vocabulary (1 + b % 32; 512 for the commands), seq_len (0: unknown, else
              1 + b % 40), flags (bit 0: vocabulary unknown, bit 1: @prefill/@decode present,
              bits 2-3: shape fault none / width / rows / width 0), fault size (the width
              is size % (vocabulary + 4), for the commands 508 + size % 8)
    arguments the case's own, below
    logits    the rest: one byte per value, cycled; VALUES maps a byte to a float32

    sampler:    temperature, top-p, seed, width (1 + b % 64)
    generate:   temperature, top-p, seed, steps, stop, prompt
    perplexity: count (b % 5), length (b % (seq_len + 3)), batch (b % 5), progress, then ids
    commands:   temperature, top-p, seed, steps, prompt text or --seqlen and --batch

A number is one byte that picks from a table, or the byte 255 and then 8
bytes read as a little-endian float64 (an integer for seeds); ids are one
byte each, ``b % (vocabulary + 4) - 2``, or 255 and 4 bytes as an int32.
"""

import contextlib
import io
import json
import math
import os
import struct
import sys
import warnings
from pathlib import Path

import atheris

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

with atheris.instrument_imports(include=["gptq_mlir"]):
    from gptq_mlir.cli import commands
    from gptq_mlir.data.tokenizer import BOS, EOS
    from gptq_mlir.errors import GPTQError
    from gptq_mlir.runtime.model import Model, Sampler, generate, perplexity

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
TOKENIZER = ROOT / "data" / "stories260K" / "tok512.bin"
TEXT = ROOT / "data" / "stories260K" / "tinystories_val_part1.txt"
#: The tokenizer's vocabulary: the commands' stand-in has as many tokens.
COMMAND_VOCABULARY = 512

CASES = ("sampler", "generate", "perplexity", "generate command", "perplexity command")
FAULTS = ("none", "width", "rows", "width 0")

#: The float32 each logits byte stands for: 0..199 finite steps of 0.25
#: around 0, then the values that break arithmetic.
SPECIAL = [
    np.nan, np.inf, -np.inf, 3.4028235e38, -3.4028235e38, 1e-45, -1e-45, 1.17549435e-38, 1e30, -1e30,
    0.0, -0.0, 88.72, -88.72, 709.8, -745.2, 65504.0, 1e-30, 1e38, -1e38,
]
VALUES = np.concatenate([
    (np.arange(200, dtype=np.float32) - 100) / 4,
    np.resize(np.array(SPECIAL, np.float32), 56),
]).astype(np.float32)

TEMPERATURES = [0.0, 0.8, 1.0, 5e-324, 1e-310, 1e-300, 1e-45, 1e-5, 0.5, 2.0, 1e300, 1.7976931348623157e308,
                -0.0, -1.0, math.inf, math.nan]
TOP_PS = [1.0, 0.9, 0.5, 1e-300, 5e-324, 1 - 2**-53, 0.999999, 0.0, -0.0, 1.0000001, 2.0, -0.5, math.nan,
          math.inf]
SEEDS = [0, 1, 7, 2**32, 2**63, 2**64 + 5, 2**128, -1]
STEPS = [-3, -1, 0, 1, 2, 3, 5, 8, 17, 40, 64, 2**31]
#: How the commands' numbers may be spelled: valid, out of range, not numbers.
TEMPERATURE_TEXTS = ["0", "0.0", "0.8", "1", "5e-324", "1e-310", "2.5e-308", "1e308", "1.7976931348623157e308",
                     "1e400", "-0", "-1", "nan", "inf", "-inf", "0x1p-3", "", " 0.5", "1_0", "\u0661"]
TOP_P_TEXTS = ["1", "1.0", "0.9", "0.5", "1e-300", "5e-324", "0.9999999999999999", "0", "-0", "1.0000001",
               "2", "nan", "inf", "", "1e-400", "+0.5"]
STEPS_TEXTS = ["1", "2", "5", "20", "64", "1000000000", "0", "-1", "x", "1e3"]
SEED_TEXTS = ["0", "1", "42", "18446744073709551621", "340282366920938463463374607431768211456", "-1", "1.5"]
PROMPTS = ["", "Once upon a time", "dog ", "caf\u00e9 \u2603", "\x00\n", "Lily"]


class Reader:
    """The input's bytes in order, 0 once they are used up."""

    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def byte(self) -> int:
        value = self.data[self.at] if self.at < len(self.data) else 0
        self.at += 1
        return value

    def raw(self, count: int) -> bytes:
        chunk = self.data[self.at : self.at + count].ljust(count, b"\0")
        self.at += count
        return chunk

    def pick(self, table):
        """An entry of ``table``, or after the byte 255 a float64 of the input."""
        code = self.byte()
        if code == 255:
            return struct.unpack("<d", self.raw(8))[0]
        return table[code % len(table)]

    def integer(self, table) -> int:
        code = self.byte()
        if code == 255:
            return struct.unpack("<q", self.raw(8))[0]
        return table[code % len(table)]

    def token(self, vocabulary: int) -> int:
        code = self.byte()
        if code == 255:
            return struct.unpack("<i", self.raw(4))[0]
        return code % (vocabulary + 4) - 2

    def rest(self) -> np.ndarray:
        codes = np.frombuffer(self.data[self.at :], np.uint8)
        return codes if codes.size else np.zeros(1, np.uint8)


class StandInModule:
    """What ``Model`` calls of a compiled module (``native.Module.call``):
    ``@forward``, ``@prefill`` and ``@decode``, answering from ``codes``."""

    def __init__(self, codes: np.ndarray, embeddings: int, width: int, fault: str, size: int, layers):
        self.codes, self.embeddings, self.width, self.fault, self.size = codes, embeddings, width, fault, size
        self.layers = layers

    def rows(self, positions: np.ndarray, tokens: np.ndarray) -> np.ndarray:
        """Logits ``[..., width]`` of each token at its position: the same
        whichever entry computes them."""
        start = (positions.astype(np.int64) * 31 + tokens.astype(np.int64) * 17) % self.codes.size
        index = (start[..., None] + np.arange(self.width)) % self.codes.size
        return VALUES[self.codes[index]]

    def check_tokens(self, entry: str, tokens: np.ndarray) -> None:
        if tokens.dtype != np.int32:
            raise AssertionError(f"@{entry} was given tokens of dtype {tokens.dtype}")
        # The compiled code's run-time check of the embedding gather.
        if tokens.size and (tokens.min() < 0 or tokens.max() >= self.embeddings):
            raise GPTQError(f"stand-in.mlir: @{entry}: token id out of range [0, {self.embeddings})")

    def check_caches(self, entry: str, caches, batch: int) -> int:
        for cache in caches:
            if (cache.dtype != np.float32 or cache.ndim != 5 or cache.shape[1] != batch
                    or (cache.shape[0], cache.shape[2], cache.shape[4]) != self.layers):
                raise AssertionError(f"@{entry} was given a cache {cache.dtype} {cache.shape}")
        return caches[0].shape[3]

    def last_rows(self, logits: np.ndarray) -> np.ndarray:
        """``[B, V]`` logits, or the wrong row count the input asks for."""
        if self.fault == "rows":
            return np.resize(logits, (self.size % 3, logits.shape[-1]))
        return logits

    def call(self, entry, inputs):
        if entry == "forward":
            (tokens,) = inputs
            self.check_tokens(entry, tokens)
            positions = np.broadcast_to(np.arange(tokens.shape[1]), tokens.shape)
            logits = self.rows(positions, tokens)
            if self.fault == "rows":
                logits = np.resize(logits, (tokens.shape[0], tokens.shape[1] + self.size % 3 - 1, self.width))
            return [logits]
        if self.layers is None:
            raise AssertionError(f"@{entry} called on a module without it")
        if entry == "prefill":
            tokens, *caches = inputs
            self.check_tokens(entry, tokens)
            positions = self.check_caches(entry, caches, tokens.shape[0])
            if tokens.ndim != 2 or tokens.shape[1] > positions:
                raise AssertionError(f"@prefill of {tokens.shape} tokens into caches of {positions} positions")
            return [self.last_rows(self.rows(np.full(tokens.shape[0], tokens.shape[1] - 1), tokens[:, -1]))]
        if entry == "decode":
            tokens, position, *caches = inputs
            self.check_tokens(entry, tokens)
            positions = self.check_caches(entry, caches, tokens.shape[0])
            if tokens.ndim != 1 or position.dtype != np.int64 or not 0 <= int(position) < positions:
                raise AssertionError(f"@decode at position {position!r} of caches of {positions} positions")
            return [self.last_rows(self.rows(np.full(tokens.shape[0], int(position)), tokens))]
        raise AssertionError(f"unknown entry @{entry}")


def stand_in(reader: Reader, command: bool) -> Model:
    """A Model over a StandInModule, its sizes and faults from the input."""
    vocabulary = COMMAND_VOCABULARY if command else 1 + reader.byte() % 32
    if command:
        reader.byte()
    seq_code, flags, size = reader.byte(), reader.byte(), reader.byte()
    fault = FAULTS[(flags >> 2) & 3]
    width = vocabulary
    if fault == "width":
        width = vocabulary - 4 + size % 8 if command else size % (vocabulary + 4)
    elif fault == "width 0":
        width = 0
    model = Model.__new__(Model)
    model.path = Path("stand-in.mlir")
    model.seq_len = None if seq_code == 0 else 1 + seq_code % 40
    model.vocab_size = None if flags & 1 else vocabulary
    model.cache_shape = (2, 1, 3) if flags & 2 else None
    model._old_caches = False
    model._module = StandInModule(np.zeros(1, np.uint8), vocabulary, width, fault, size, model.cache_shape)
    return model


def vocabulary_of(model: Model) -> int:
    """The ids a generated token may take: the model's vocabulary, or the
    logits' width when the module states none."""
    return model.vocab_size if model.vocab_size is not None else model._module.width


def sampler_case(reader: Reader) -> None:
    temperature, top_p, seed = reader.pick(TEMPERATURES), reader.pick(TOP_PS), reader.integer(SEEDS)
    width = 1 + reader.byte() % 64
    codes = reader.rest()
    logits = VALUES[codes[np.arange(width) % codes.size]]
    try:
        sampler = Sampler(temperature, top_p, seed)
    except GPTQError:
        return
    for _ in range(2):
        try:
            token = sampler(logits)
        except GPTQError:
            if np.isfinite(logits).all():
                raise AssertionError(f"the sampler refused finite logits {logits}") from None
            return
        if not (isinstance(token, int) and 0 <= token < width):
            raise AssertionError(f"the sampler picked {token!r} of {width} logits")
        if temperature == 0 and logits[token] != logits.max():
            raise AssertionError(f"greedy picked {token}, not a maximum of {logits}")


def generate_case(reader: Reader) -> None:
    model = stand_in(reader, command=False)
    temperature, top_p, seed = reader.pick(TEMPERATURES), reader.pick(TOP_PS), reader.integer(SEEDS)
    steps = reader.integer(STEPS)
    stop = ((BOS, EOS), (), (0, 3, 5))[reader.byte() % 3]
    vocabulary = model._module.embeddings
    context = model.seq_len or 20
    length = reader.byte() % (context + 4)
    prompt = [reader.token(vocabulary) for _ in range(length)]
    if model.seq_len is None and not 0 <= steps <= 64:
        # Without a context nothing but steps bounds the loop: a run as long as asked.
        steps = 64 if steps > 0 else steps
    model._module.codes = reader.rest()

    outcomes = []
    for use_cache in (None, False) if model.cache_shape is not None else (None,):
        try:
            sampler = Sampler(temperature, top_p, seed)
        except GPTQError:
            return
        made = []
        try:
            tokens = generate(model, steps, prompt, lambda previous, token: made.append(token), stop, sampler,
                              use_cache)
        except GPTQError:
            outcomes.append(None)
            continue
        start = prompt if prompt else [BOS]
        if tokens[: len(start)] != start or tokens[len(start) :] != made:
            raise AssertionError(f"generate returned {tokens} from prompt {prompt}, calling back with {made}")
        if len(made) > max(steps, 0) or (model.seq_len is not None and made and len(tokens) > model.seq_len):
            raise AssertionError(f"{len(made)} tokens made for {steps} steps, context {model.seq_len}")
        top = vocabulary_of(model)
        if not all(isinstance(t, int) and 0 <= t < top and t not in stop for t in made):
            raise AssertionError(f"generated tokens outside the vocabulary of {top} (or stop tokens {stop}): {made}")
        outcomes.append(tokens)
    if model._module.fault == "none" and len(outcomes) == 2 and outcomes[0] != outcomes[1]:
        raise AssertionError(f"with the cache {outcomes[0]}, without {outcomes[1]}")


def perplexity_case(reader: Reader) -> None:
    model = stand_in(reader, command=False)
    count = reader.byte() % 5
    length = reader.byte() % ((model.seq_len or 12) + 3)
    batch = reader.byte() % 5
    progress = io.StringIO() if reader.byte() & 1 else None
    dtype = np.int64 if reader.byte() & 1 else np.int32
    vocabulary = model._module.embeddings
    ids = [reader.token(vocabulary) for _ in range(count * length)]
    windows = np.array(ids, np.int64).reshape(count, length).astype(dtype)
    model._module.codes = reader.rest()
    try:
        result = perplexity(model, windows, batch, progress=progress)
    except GPTQError:
        return
    value = result["perplexity"]
    if not (isinstance(value, float) and math.isfinite(value) and value > 0):
        raise AssertionError(f"perplexity {value!r}")
    if result["tokens"] != count * (length - 1):
        raise AssertionError(f"{result['tokens']} tokens counted over windows {windows.shape}")


@contextlib.contextmanager
def command_model(model: Model):
    """``commands.Model`` gives ``model`` for any path, and the perplexity
    command's progress goes to the ``sys.stderr`` of the moment (its
    default is the one of import time)."""
    real = commands.Model, commands.perplexity, commands.build_parser
    commands.Model = lambda path: model
    commands.perplexity = lambda model, windows, batch: perplexity(model, windows, batch, progress=sys.stderr)
    # Built once: building is most of a short command's time, parsing leaves it as it was.
    commands.build_parser = lambda: PARSER
    try:
        yield
    finally:
        commands.Model, commands.perplexity, commands.build_parser = real


def run_command(argv, model: Model) -> None:
    out, err = io.StringIO(), io.StringIO()
    with command_model(model), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = commands.main(argv)
    lines = err.getvalue().splitlines()
    if status == 0:
        if argv[0] == "perplexity":
            value = json.loads(out.getvalue())["perplexity"]
            if not (isinstance(value, float) and math.isfinite(value)):
                raise AssertionError(f"{argv}: perplexity {value!r}, exit status 0")
        return
    if status != 1 or not lines or not lines[-1].startswith("gptq_mlir: error: ") or "internal error" in lines[-1]:
        raise AssertionError(f"{argv}: exit status {status}, stderr {err.getvalue()[-2000:]!r}")
    if any(not line.startswith(("perplexity: ", "gptq_mlir: error: ")) for line in lines):
        raise AssertionError(f"{argv}: stray lines on stderr {lines}")


def generate_command_case(reader: Reader) -> None:
    model = stand_in(reader, command=True)
    argv = ["generate", "--model", "stand-in.mlir", "--tokenizer", str(TOKENIZER),
            "--temperature", reader.pick(TEMPERATURE_TEXTS)]
    argv += ["--top-p", reader.pick(TOP_P_TEXTS), "--seed", reader.pick(SEED_TEXTS)]
    steps = reader.pick(STEPS_TEXTS)
    if model.seq_len is None and steps == "1000000000":
        steps = "64"
    argv += ["--steps", steps]
    prompt = PROMPTS[reader.byte() % len(PROMPTS)] * (reader.byte() % 24)
    if prompt:
        argv += ["--prompt", prompt]
    argv = [str(arg) if not isinstance(arg, str) else arg for arg in argv]
    model._module.codes = reader.rest()
    run_command(argv, model)


def perplexity_command_case(reader: Reader) -> None:
    model = stand_in(reader, command=True)
    seqlen = reader.integer([2, 3, 8, 16, 40, 41, 1, 0, -2])
    batch = reader.integer([1, 2, 32, 0])
    model._module.codes = reader.rest()
    argv = ["perplexity", "--model", "stand-in.mlir", "--tokenizer", str(TOKENIZER), "--text", TEXT_FILE,
            "--seqlen", str(seqlen), "--batch", str(batch)]
    run_command(argv, model)


RUN = {
    "sampler": sampler_case,
    "generate": generate_case,
    "perplexity": perplexity_case,
    "generate command": generate_command_case,
    "perplexity command": perplexity_command_case,
}


def test_one_input(data: bytes) -> None:
    reader = Reader(data)
    case = CASES[reader.byte() % len(CASES)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RUN[case](reader)


def write_text() -> str:
    """A short text for the perplexity command, the first stories of
    TinyStories, in an anonymous memory file (``memfd_create``: a regular
    file that goes with the process, however it ends), by its
    ``/proc/self/fd`` name."""
    handle = os.memfd_create("gptq-fuzz-generation.txt", 0)
    os.write(handle, TEXT.read_bytes()[:400])
    return f"/proc/self/fd/{handle}"


TEXT_FILE = ""
PARSER = commands.build_parser()


def main() -> None:
    global TEXT_FILE
    TEXT_FILE = write_text()
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
