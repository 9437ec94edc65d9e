"""Saves a dense_resource blob of an MLIR file as .npy (tests only).

Usage: resource.py FILE.mlir NAME DTYPE SHAPE OUT.npy, SHAPE as 4x2. The
blob's text is "0x" followed by a 4-byte alignment then the raw
little-endian data, as MLIR prints builtin dialect resources.
"""
import sys

import numpy as np

path, name, dtype, shape, out = sys.argv[1:]
key = f"      {name}: \"0x"
with open(path) as f:
    for line in f:
        if line.startswith(key) or line.startswith(key.strip()):
            text = line.split('"')[1][2:]
            data = bytes.fromhex(text)[4:]
            dims = [int(d) for d in shape.split("x")]
            np.save(out, np.frombuffer(data, dtype=dtype).reshape(dims))
            break
    else:
        sys.exit(f"resource.py: no resource '{name}' in {path}")
