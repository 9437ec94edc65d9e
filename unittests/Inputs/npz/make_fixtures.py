"""Writes the .npz fixtures of unittests/NpzTest.cpp with NumPy, once:

    .venv/bin/python unittests/Inputs/npz/make_fixtures.py

savez.npz (stored members) and savez_compressed.npz (deflated members) hold
the same three small arrays; NpzTest.cpp checks their values. NumPy writes
each member with a ZIP64 extra field in its local header and the time of
writing in its headers, so the bytes differ from run to run; the contents
do not.
"""

import os

import numpy as np


def arrays():
    return {
        "layers.0.attention.wq": np.arange(6, dtype=np.float32).reshape(2, 3) / 4,
        "counts": np.array([1, -2, 3, 1 << 40], dtype=np.int64),
        "scalar": np.float64(2.5),
    }


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    np.savez(os.path.join(here, "savez.npz"), **arrays())
    np.savez_compressed(os.path.join(here, "savez_compressed.npz"), **arrays())


if __name__ == "__main__":
    main()
