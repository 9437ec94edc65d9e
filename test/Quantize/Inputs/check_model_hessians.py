"""Summarizes what an instrumented model returned: the results in OUTDIR
(0.npy, 1.npy, ...) are its own result, the Hessians, then the sample count.

Usage: check_model_hessians.py OUTDIR. Prints one line per check.
"""
import os
import sys

import numpy as np

out = sys.argv[1]
k = len(os.listdir(out))
r = [np.load(os.path.join(out, f"{i}.npy")) for i in range(k)]
h = r[1:-1]
print("results", k, "logits", r[0].shape, "count", r[-1].dtype, int(r[-1]))
print("sizes", sorted(set(x.shape[0] for x in h)))
print("square", all(x.ndim == 2 and x.shape[0] == x.shape[1] and x.dtype == np.float32 for x in h))
print("symmetric", all(np.allclose(x, x.T, rtol=1e-5, atol=1e-6 * np.abs(x).max()) for x in h))
print("diagonal", all((np.diag(x) >= 0).all() and np.diag(x).max() > 0 for x in h))
print("finite", all(np.isfinite(x).all() for x in h))
