"""Independent checks of gptq ops run through gptq-run (numpy only).

Usage: numerics.py CHECK WORK_DIR, where CHECK is one of the functions below.
Each writes its inputs, runs gptq-run on a module in Inputs/, and prints one
'ok ...' line, or raises (non-zero exit) on a mismatch.
"""

import os
import subprocess
import sys

import numpy as np

import golden

INPUTS = os.path.dirname(os.path.abspath(__file__))


def gptq_run(module, entry, arrays, work, tool="gptq-run", extra=()):
    os.makedirs(work, exist_ok=True)
    args = [tool, os.path.join(INPUTS, module), "--entry", entry,
            "--output-dir", os.path.join(work, "out-" + entry)] + list(extra)
    for i, a in enumerate(arrays):
        path = os.path.join(work, "%s-in%d.npy" % (entry, i))
        np.save(path, a)
        args += ["--input", path]
    subprocess.run(args, check=True)
    out = []
    i = 0
    while os.path.exists(os.path.join(work, "out-" + entry, "%d.npy" % i)):
        out.append(np.load(os.path.join(work, "out-" + entry, "%d.npy" % i)))
        i += 1
    return out


def spd_hessian(rng, samples, cols, scale=None, dead=()):
    """A synthetic SPD Hessian: X = samples x cols standard normals (float32),
    columns scale[0] multiplied by scale[1], columns dead zeroed, and
    H = 2/samples X^T X in float32."""
    x = rng.standard_normal((samples, cols)).astype(np.float32)
    if scale is not None:
        x[:, scale[0]] *= scale[1]
    x[:, dead] = 0
    return (2.0 / samples * x.T @ x).astype(np.float32)


def hessian(work):
    """Running accumulation over batches of different sizes equals the closed
    form 2/n * sum x x^T with n the number of samples, and is exactly
    symmetric (the kernel computes the lower triangle and copies it up):
    24 columns (one diagonal block), 200 (bands of 32 rows, panels of 64
    columns, and a ragged last band) and 1100 over 600 + 200 + 200 tokens
    (the CPU form's blocks of 512 tokens and bands of 512 rows, each ragged
    at its end)."""
    rng = np.random.default_rng(0)
    errors = []
    for cols, tokens in ((24, 10), (200, 10), (1100, 200)):
        b1 = rng.standard_normal((3, tokens, cols)).astype(np.float32)
        b2 = rng.standard_normal((1, tokens, cols)).astype(np.float32)
        b3 = rng.standard_normal((tokens, cols)).astype(np.float32)  # one sample
        h, n = gptq_run("hessian.mlir", "accumulate3", [b1, b2, b3], work)
        xs = np.concatenate([b1.reshape(-1, cols), b2.reshape(-1, cols), b3]).astype(np.float64)
        closed = 2.0 / 5 * xs.T @ xs
        assert int(n) == 5, n
        assert np.array_equal(h, h.T), cols
        err = np.abs(h - closed).max() / np.abs(closed).max()
        assert err < 1e-5, (cols, err)
        errors.append(err)
    print("ok hessian: 3 batches, 5 samples, symmetric, relative error %.1e" % max(errors))


def pack(work):
    """Pack then unpack is the identity for every width; the bit layout is a
    little-endian stream per row."""
    rng = np.random.default_rng(1)
    for bits in range(2, 9):
        cols = 37
        codes = rng.integers(0, 2 ** bits, (5, cols), dtype=np.uint8)
        words, back = gptq_run("codes.mlir", "pack%d" % bits, [codes], work)
        assert words.shape == (5, (cols * bits + 31) // 32), words.shape
        assert np.array_equal(back.view(np.uint8), codes), bits
        stream = 0
        for j, c in enumerate(codes[0].tolist()):
            stream |= c << (j * bits)
        expect = [(stream >> (32 * w)) & 0xFFFFFFFF for w in range(words.shape[1])]
        assert words[0].view(np.uint32).tolist() == expect, bits
    print("ok pack: bits 2..8 round-trip, little-endian bit stream")


def dequantize(work):
    """scale * (code - zero) with per-column groups, exactly."""
    rng = np.random.default_rng(2)
    codes = rng.integers(0, 16, (6, 20), dtype=np.uint8)
    scales = rng.random((6, 3)).astype(np.float32)
    zeros = rng.integers(0, 16, (6, 3)).astype(np.float32)
    g = rng.integers(0, 3, 20).astype(np.int32)
    (w,) = gptq_run("codes.mlir", "dequantize", [codes, scales, zeros, g], work)
    expect = scales[:, g] * (codes.astype(np.float32) - zeros[:, g])
    assert np.array_equal(w, expect)
    print("ok dequantize: exact")


def act_order(work):
    """A stable descending sort of the diagonal, dead entries counting as 1;
    permute and its inverse."""
    d = np.array([0.5, 2.0, 0.0, 2.0, 1.0, 3.0, 0.25], np.float32)
    h = np.diag(d).astype(np.float32)
    w = np.arange(14, dtype=np.float32).reshape(2, 7)
    perm, wp, back = gptq_run("order.mlir", "order", [h, w], work)
    d1 = np.where(d == 0, 1, d)
    assert perm.tolist() == np.argsort(-d1, kind="stable").tolist(), perm
    assert np.array_equal(wp, w[:, perm])
    assert np.array_equal(back, w)
    print("ok act_order: %s" % perm.tolist())


def mse(work):
    """The MSE grid search never gives a larger per-row 2.4-norm error than
    min-max, and improves some rows."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((64, 96)).astype(np.float32)
    w[:, 0] *= 8  # an outlier column widens every min-max range
    s0, z0, s1, z1 = gptq_run("grid.mlir", "grids", [w], work)

    def err(s, z):
        q = np.clip(np.round(w / s) + z, 0, 15)
        return (np.abs(s * (q - z) - w) ** 2.4).sum(1)

    e0, e1 = err(s0, z0), err(s1, z1)
    assert (e1 <= e0 * (1 + 1e-6)).all(), (e1 - e0).max()
    assert (e1 < e0).sum() > 32
    print("ok mse: never worse, better on %d of 64 rows" % (e1 < e0).sum())


# The kernel sets of the lowering: the CPU schedule's, the portable ones on
# the CPU, and the GPU path's kernels run with the GPU's semantics.
KERNEL_SETS = ([], ["--kernels", "portable"], ["--device", "cuda-emulated"])


def cholesky(work):
    """U from gptq.damped_cholesky satisfies U^T U = (H damped)^-1 with U
    upper triangular and a positive diagonal, for several block sizes of
    the blocked factorization (ragged last block included) and odd sizes
    (the in-place reversal has a middle row), dead inputs set to 1; and an
    indefinite H clears the success flag."""
    rng = np.random.default_rng(5)
    for n, blocks in ((100, (16, 33, 128)), (37, (8, 128)), (1, (128,))):
        h = spd_hessian(rng, 4 * n, n, dead=[7] if n > 7 else [])  # a dead input
        d = np.diag(h).astype(np.float64).copy()
        d[d == 0] = 1
        hd = h.astype(np.float64)
        np.fill_diagonal(hd, d + 0.01 * d.mean())
        expect = np.linalg.inv(hd)
        for block in blocks:
            us = []
            for kernels in KERNEL_SETS:
                u, ok = gptq_run("cholesky.mlir", "factor", [h], work,
                                 extra=["--cholesky-block", str(block)] + kernels)
                assert bool(ok), (n, block, kernels)
                assert u.shape == (n, n), (n, block, kernels)
                assert np.allclose(np.tril(u, -1), 0), (n, block, kernels)
                assert (np.diag(u) > 0).all(), (n, block, kernels)
                err = np.abs(u.T.astype(np.float64) @ u - expect).max() / np.abs(expect).max()
                assert err < 1e-4, (n, block, kernels, err)
                us.append(u)
            if block >= n:
                # One diagonal block, no matrix products (whose sums the
                # kernel sets order differently): the same operations in the
                # same order, so the same bits.
                for u, kernels in zip(us[1:], KERNEL_SETS[1:]):
                    assert np.array_equal(u, us[0]), (n, block, kernels)
    bad = -np.eye(8, dtype=np.float32)
    bad[0, 0] = 50
    for kernels in KERNEL_SETS:
        _, ok = gptq_run("cholesky.mlir", "factor", [bad], work, extra=kernels)
        assert not bool(ok), kernels
    print("ok cholesky: U^T U = H^-1 for n = 100, 37, 1 and blocks 8 to 128, "
          "with the CPU kernels, the portable ones and the GPU's emulated; "
          "a single block bit for bit the same; indefinite H flagged")



def run_layer(tool, work, name, w, h, *flags):
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "W.npy"), w)
    np.save(os.path.join(d, "H.npy"), h)
    out = os.path.join(d, "out")
    report = golden.run_quantize_layer(tool, os.path.join(d, "W.npy"),
                                       os.path.join(d, "H.npy"), out, flags)
    return np.load(os.path.join(out, "dequantized.npy")), report


def block_size(work):
    """The block size changes nothing (to float32 rounding) for per-row
    grids, static groups and block sizes dividing the group size, and changes
    the result for dynamic groups that start inside a block."""
    tool = "gptq-quantize-layer"
    rng = np.random.default_rng(4)
    h = spd_hessian(rng, 512, 96, scale=(5, 6))
    w = rng.standard_normal((48, 96)).astype(np.float32)
    # (name, flags, baseline block size): for "dividing" every compared
    # block size (32, 16, 8) divides the group size 32.
    cases = [("per_row", [], "128"),
             ("static", ["--group-size", "32", "--static-groups"], "128"),
             ("dividing", ["--group-size", "32"], "32")]
    for name, flags, first in cases:
        base, r0 = run_layer(tool, work, name + first, w, h, "--block-size", first, *flags)
        for b in ("16", "8"):
            other, r1 = run_layer(tool, work, name + b, w, h, "--block-size", b, *flags)
            frac, rel, _ = golden.criterion(other, base, r1["loss"], r0["loss"])
            assert frac >= golden.MIN_MATCH, (name, b, frac)
            assert rel <= golden.LOSS_RTOL, (name, b)
    base, r0 = run_layer(tool, work, "dyn128", w, h, "--group-size", "32")
    other, r1 = run_layer(tool, work, "dyn48", w, h, "--group-size", "32", "--block-size", "48")
    frac = golden.close_entries(other, base).mean()
    assert frac < 0.99, frac
    print("ok block_size: invariant where the semantics say so; "
          "block 48 with groups of 32 changes %.0f%% of entries" % (100 * (1 - frac)))


def reference(work):
    """Layers of odd shapes (odd and ragged column counts, dead inputs,
    act-order with static or dynamic groups, symmetric grids) against the
    PyTorch implementation of the reference in bench/torch_gptq.py, with the
    golden criterion: 99.9% of entries within 1e-5 |Q| + 1e-7, loss within
    1e-4 relative."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                    "..", "bench"))
    import torch_gptq
    tool = "gptq-quantize-layer"
    rng = np.random.default_rng(11)
    cases = [
        ("odd_dead_dyn", 37, 203, [3, 100, 202], 64, False, False, True),
        ("per_row_sym", 20, 129, [], -1, True, False, True),
        ("static_ragged", 33, 97, [0], 32, False, True, True),
        ("no_act_order", 16, 75, [10], 16, False, False, False),
    ]
    for name, rows, cols, dead, group, sym, static, act in cases:
        h = spd_hessian(rng, 3 * cols, cols, scale=(slice(cols // 8), 4), dead=dead)
        w = (0.1 * rng.standard_normal((rows, cols))).astype(np.float32)
        flags = ["--group-size", str(group)]
        flags += ["--sym"] if sym else []
        flags += ["--static-groups"] if static else []
        flags += ["--act-order"] if act else []
        ours, report = run_layer(tool, work, name, w, h, *flags)
        q, loss = torch_gptq.gptq_quantize(w, h, group_size=group, sym=sym,
                                           act_order=act, static_groups=static)
        q = q.numpy()
        frac, rel, _ = golden.criterion(ours, q, report["loss"], loss)
        assert frac >= golden.MIN_MATCH, (name, frac)
        assert rel <= golden.LOSS_RTOL, (name, report["loss"], loss)
        assert (ours[:, dead] == 0).all() or not dead, name
    print("ok reference: %d odd-shaped layers agree with the PyTorch reference"
          % len(cases))


def main():
    check, work = sys.argv[1], sys.argv[2]
    globals()[check](work)


if __name__ == "__main__":
    main()
