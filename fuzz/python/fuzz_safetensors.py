"""Fuzzes the safetensors reader (gptq_mlir.files.inputs.parse_safetensors) with
atheris, against the safetensors package.

Every input either parses or raises GPTQError. A file that parses has
tensors that lie inside its data, cover it exactly, and are as long as their
dtype and shape say; each one the readers return as an array reads with its
shape. The safetensors package must accept every file ours accepts and give
the same arrays (for the dtypes numpy has). Anything else is a finding.

    .venv/bin/python fuzz/python/fuzz_safetensors.py [libFuzzer options] [CORPUS...]

scripts/fuzz.sh runs it with the seeds of fuzz/python/corpus/safetensors.
"""

import math
import os
import sys

import atheris

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

with atheris.instrument_imports(include=["gptq_mlir"]):
    from gptq_mlir.errors import GPTQError
    from gptq_mlir.files import inputs

import numpy as np
from safetensors.numpy import load as package_load

#: dtypes the safetensors package's numpy loader reads.
NUMPY_LOADABLE = {"F64", "F32", "F16", "I64", "I32", "I16", "I8", "U64", "U32", "U16", "U8", "BOOL"}


def test_one_input(data: bytes) -> None:
    try:
        tensors, start = inputs.parse_safetensors(data)
    except GPTQError:
        return
    position = 0
    for name, info in sorted(tensors.items(), key=lambda item: (item[1].begin, item[1].end)):
        if info.begin != position or info.nbytes != math.prod(info.shape) * inputs.SAFETENSORS_DTYPE_BYTES[info.dtype]:
            raise AssertionError(f"tensor {name!r} accepted at {info}")
        position = info.end
    if start + position != len(data):
        raise AssertionError("accepted tensors do not cover the data")
    for name, info in tensors.items():
        if info.dtype in inputs.NUMPY_DTYPES:
            array = inputs.tensor_array(data[start + info.begin : start + info.end], info)
            if array.shape != info.shape:
                raise AssertionError(f"tensor {name!r} read with shape {array.shape}")
    if all(info.dtype in NUMPY_LOADABLE for info in tensors.values()):
        theirs = package_load(data)
        if sorted(theirs) != sorted(tensors):
            raise AssertionError("the safetensors package lists other tensors")
        for name, info in tensors.items():
            if info.dtype in inputs.NUMPY_DTYPES:
                ours = inputs.tensor_array(data[start + info.begin : start + info.end], info)
                if not np.array_equal(ours.view(np.uint8), np.ascontiguousarray(theirs[name]).view(np.uint8)):
                    raise AssertionError(f"tensor {name!r} differs from the safetensors package's")


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
