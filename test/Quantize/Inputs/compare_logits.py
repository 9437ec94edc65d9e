"""Compares the first result (0.npy) of gptq-run output folders.

Usage: compare_logits.py A B [C...]. Prints, for each folder after the
first, whether its logits equal A's to 1e-5 relative (of A's largest
magnitude) and whether they equal A's exactly.
"""
import sys

import numpy as np

a = np.load(f"{sys.argv[1]}/0.npy")
scale = np.abs(a).max()
for other in sys.argv[2:]:
    b = np.load(f"{other}/0.npy")
    close = a.shape == b.shape and bool(np.abs(a - b).max() <= 1e-5 * scale)
    print("close", close, "equal", bool(a.shape == b.shape and (a == b).all()))
