"""Checks the Hessians that an instrumented two-linears.mlir returned.

Usage: check_hessians.py INPUT.npy OUTDIR. Prints one line per check.
"""
import sys

import numpy as np

x = np.load(sys.argv[1]).astype(np.float64)
out = sys.argv[2]
w1 = np.array([[0.5, -1.0, 0.25, 2.0], [1.5, 0.0, -0.5, 1.0],
               [-2.0, 0.75, 1.0, 0.5], [0.1, 0.2, 0.3, 0.4],
               [1.0, -1.0, 1.0, -1.0]])
w2 = np.array([[1.0, 0.5, -0.5, 2.0, 0.0], [0.25, -1.0, 1.0, 0.0, 1.5],
               [-0.75, 0.5, 0.5, 1.0, -1.0]])
n = x.shape[0]
x1 = x.reshape(-1, x.shape[-1])
x2 = np.maximum(x1 @ w1.T, 0.0)
y = x2 @ w2.T
results = [np.load(f"{out}/{i}.npy") for i in range(4)]
print("logits", np.allclose(results[0].reshape(-1, 3), y, rtol=1e-5, atol=1e-5))
for name, xi, h in (("fc1", x1, results[1]), ("fc2", x2, results[2])):
    expected = 2.0 / n * xi.T @ xi
    print(name, h.dtype, h.shape,
          np.allclose(h, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max()))
print("count", results[3].dtype, results[3].shape, int(results[3]))
