"""Fuzzes the llama2.c tokenizer reader (gptq_mlir.data.tokenizer) with atheris.

Every input either parses or raises GPTQError, the reader's documented
error. A tokenizer that parses then encodes and decodes a few texts (ASCII,
multi-byte UTF-8, a byte missing from most vocabularies, the empty text):
encoding yields ids inside the vocabulary, decoding yields text, and neither
raises anything but GPTQError (a vocabulary without a " " token cannot
encode). Anything else is a finding.

    .venv/bin/python fuzz/python/fuzz_tokenizer.py [libFuzzer options] [CORPUS...]

scripts/fuzz.sh runs it with the seeds of fuzz/python/corpus/tokenizer.
"""

import os
import sys

import atheris

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

with atheris.instrument_imports(include=["gptq_mlir"]):
    from gptq_mlir.data.tokenizer import parse_tokenizer
    from gptq_mlir.errors import GPTQError

TEXTS = ["Once upon a time, there was a little girl.", "caf\u00e9 \u2603\n\t<0x41>", "\x00\x7f", ""]


def test_one_input(data: bytes) -> None:
    try:
        tokenizer = parse_tokenizer(data)
    except GPTQError:
        return
    for text in TEXTS:
        try:
            ids = tokenizer.encode(text, bos=True, eos=True)
        except GPTQError:
            continue
        if not all(0 <= i < tokenizer.vocab_size for i in ids):
            raise AssertionError(f"encode({text!r}) gave ids outside the vocabulary: {ids}")
        if not isinstance(tokenizer.decode(ids), str):
            raise AssertionError("decode did not return text")


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
