"""Writes the seed corpora of the Python fuzzers (fuzz/python/corpus/):
small valid checkpoints and tokenizers, and cut-off pieces of the real ones
in data/stories260K. Deterministic; run it again after a format change.

    .venv/bin/python fuzz/python/make_seeds.py
"""

import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "python"))

from gptq_mlir import llama2c  # noqa: E402
from gptq_mlir.tokenizer import BYTE_OFFSET  # noqa: E402

DATA = os.path.join(ROOT, "data", "stories260K")


def tiny_checkpoint(shared: bool, version: int) -> bytes:
    """dim 8, 1 layer, 2 query heads over 1 key/value head, 5 tokens, 3 positions."""
    cfg = llama2c.Llama2cConfig(8, 12, 1, 2, 1, 5, 3, shared)
    weights = {}
    for index, (name, shape) in enumerate(llama2c.weight_layout(cfg, 0)):
        count = int(np.prod(shape))
        weights[name] = (np.arange(count, dtype=np.float32).reshape(shape) % 7 - 3) / (index + 4)
    weights["freq_cis_real"], weights["freq_cis_imag"] = llama2c.rope_tables(cfg.head_size, cfg.seq_len)
    return llama2c.serialize_checkpoint(cfg, weights, version)


def tokenizer_file(pieces, scores, max_length: int) -> bytes:
    out = [struct.pack("<i", max_length)]
    for piece, score in zip(pieces, scores):
        out.append(struct.pack("<fi", score, len(piece)) + piece)
    return b"".join(out)


def small_tokenizer() -> bytes:
    """<unk>, BOS, EOS, the 256 byte tokens, then " ", letters and merges."""
    pieces = [b"<unk>", b"\n<s>\n", b"\n</s>\n"] + [b"<0x%02X>" % b for b in range(256)]
    extra = [b" ", b"a", b"b", b" a", b"ab", b" ab", b"\xc3\xa9"]
    scores = [0.0] * len(pieces) + [-float(i) for i in range(len(extra))]
    assert len(pieces) == BYTE_OFFSET + 256
    return tokenizer_file(pieces + extra, scores, 6)


def seeds():
    real_checkpoint = open(os.path.join(DATA, "stories260K.bin"), "rb").read()
    real_tokenizer = open(os.path.join(DATA, "tok512.bin"), "rb").read()
    yield "llama2c", "stories260K-head", real_checkpoint[: llama2c.LEGACY_HEADER_BYTES + 64]
    for version in (0, 1):
        for shared in (True, False):
            name = f"tiny-v{version}-{'shared' if shared else 'untied'}"
            yield "llama2c", name, tiny_checkpoint(shared, version)
    yield "llama2c", "v1-header-only", tiny_checkpoint(True, 1)[: llama2c.VERSION1_HEADER_BYTES]
    yield "tokenizer", "tok512", real_tokenizer
    yield "tokenizer", "tok512-head", real_tokenizer[:100]
    yield "tokenizer", "small", small_tokenizer()


def main() -> None:
    for target, name, data in seeds():
        folder = os.path.join(HERE, "corpus", target)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, name), "wb") as handle:
            handle.write(data)
        print(f"{target}/{name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
