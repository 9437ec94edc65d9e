"""Fuzzes the llama2.c checkpoint reader (gptq_mlir.importers.llama2c) with atheris.

Every input either parses or raises GPTQError, the reader's documented
error; anything else (another exception, a hang, running out of memory) is a
finding. A checkpoint that parses must serialize back to the same bytes
(version 1: the same header fields and body; its padding is not kept).

    .venv/bin/python fuzz/python/fuzz_llama2c.py [libFuzzer options] [CORPUS...]

scripts/fuzz.sh runs it with the seeds of fuzz/python/corpus/llama2c.
"""

import os
import sys

import atheris

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

with atheris.instrument_imports(include=["gptq_mlir"]):
    from gptq_mlir.errors import GPTQError
    from gptq_mlir.importers import llama2c


def test_one_input(data: bytes) -> None:
    try:
        checkpoint = llama2c.parse_checkpoint(data)
    except GPTQError:
        return
    written = llama2c.serialize_checkpoint(checkpoint.config, checkpoint.weights, checkpoint.version)
    if checkpoint.version == 0:
        same = written == data
    else:
        header = 37  # magic, version, 7 params, the shared-classifier flag
        same = written[:header] == data[:header] and written[256:] == data[256:]
    if not same:
        raise AssertionError(f"accepted checkpoint does not round-trip: {checkpoint.config}")


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
