"""Checks the Hessians moe-routed-experts.test dumped: each expert's w1 and
w3 against the Hessian of the tokens the reference router sends it (2/n
X^T X over the n calls of 16 tokens), and every layer's against those of the
partially quantized model (sequential=none on the float-written output,
whose layers, printed without locations, are linear.<i> in program order;
the router, float, is in neither)."""
import sys
import numpy as np

d = sys.argv[1]
E, K, BATCH = 4, 2, 16
weights = np.load(f"{d}/weights.npz")
router = weights["wr"].astype(np.float64)
calib = np.load(f"{d}/calib.npy").astype(np.float64)
used = np.load(f"{d}/h.npz")
prefix = np.load(f"{d}/prefix.npz")

calls = len(calib) // BATCH
routed = [np.zeros((calib.shape[1],) * 2) for _ in range(E)]
for b in range(calls):
    x = calib[b * BATCH:(b + 1) * BATCH]
    top = np.argsort(-(x @ router.T), axis=1, kind="stable")[:, :K]
    for e in range(E):
        rows = x[(top == e).any(axis=1)]
        routed[e] += rows.T @ rows


def close(a, b):
    return np.abs(a - b).max() <= 1e-6 * np.abs(b).max()


ok = all(
    close(used[f"layers.0.block_sparse_moe.experts.{e}.{n}"], 2 * routed[e] / calls)
    for e in range(E) for n in ("w1", "w3"))
print("routed w1 w3", ok)
assert len(used.files) == len(prefix.files) == 12
print("prefix w2", all(close(used[a], prefix[b]) for a, b in zip(used.files, prefix.files))
      and all(a.endswith(".w2") for a in used.files[8:]))
