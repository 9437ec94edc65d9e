"""Checks the Hessians and reports that moe-routed-experts.test wrote.

    check_moe.py DIR routed|all

routed: each expert's w1 and w3 Hessian against the Hessian of the tokens the
reference router sends it (2/n X^T X over the n calls of 16 tokens); the
report's tokens of each expert, and which experts min-tokens=30 rounded to
nearest (DIR/min.json). all (moe-calibration=all): every expert's w1 and w3
Hessian is that of all the tokens, each once per choice (K times). Both:
every layer's Hessian against those of the partially quantized model
(sequential=none on the float-written output, whose layers, printed without
locations, are linear.<i> in program order; the router, float, is in
neither)."""
import json
import sys
import numpy as np

d, mode = sys.argv[1], sys.argv[2]
suffix = "" if mode == "routed" else "_all"
E, K, BATCH = 4, 2, 16
weights = np.load(f"{d}/weights.npz")
router = weights["wr"].astype(np.float64)
calib = np.load(f"{d}/calib.npy").astype(np.float64)
used = np.load(f"{d}/h{suffix}.npz")
prefix = np.load(f"{d}/prefix{suffix}.npz")

calls = len(calib) // BATCH
routed = [np.zeros((calib.shape[1],) * 2) for _ in range(E)]
tokens = [0] * E
for b in range(calls):
    x = calib[b * BATCH:(b + 1) * BATCH]
    top = np.argsort(-(x @ router.T), axis=1, kind="stable")[:, :K]
    for e in range(E):
        rows = x[(top == e).any(axis=1)] if mode == "routed" else np.repeat(x, K, axis=0)
        routed[e] += rows.T @ rows
        tokens[e] += len(rows)


def close(a, b):
    return np.abs(a - b).max() <= 1e-6 * np.abs(b).max()


def name(e, n):
    return f"layers.0.block_sparse_moe.experts.{e}.{n}"


ok = all(close(used[name(e, n)], 2 * routed[e] / calls) for e in range(E) for n in ("w1", "w3"))
print(mode, "w1 w3", ok)
assert len(used.files) == len(prefix.files) == 12
print("prefix w2", all(close(used[a], prefix[b]) for a, b in zip(used.files, prefix.files))
      and all(a.endswith(".w2") for a in used.files[8:]))
report = {layer["name"]: layer for layer in json.load(open(f"{d}/report{suffix}.json"))["layers"]}
print("tokens", all(report[name(e, n)]["tokens"] == tokens[e] and report[name(e, n)]["expert"]
                   for e in range(E) for n in ("w1", "w3", "w2")),
      sorted(set(tokens)) if mode == "all" else "")
if mode == "routed":
    fallback = {layer["name"]: layer["method"] for layer in json.load(open(f"{d}/min.json"))["layers"]}
    print("min-tokens", all(fallback[name(e, n)] == ("rtn (too few tokens)" if tokens[e] < 30 else "gptq")
                            for e in range(E) for n in ("w1", "w3", "w2")),
          sum(t < 30 for t in tokens) > 0 and sum(t >= 30 for t in tokens) > 0)
