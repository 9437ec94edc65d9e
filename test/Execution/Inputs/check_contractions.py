"""Makes inputs for contractions.mlir (mode ``make DIR``) and checks gptq-run's
results against float64 numpy (mode ``check DIR [PREFIX]``, the cases in
DIR/PREFIX<name> that exist): every entry within 1e-5 of the largest
magnitude of its reference, and every element finite; with PREFIX, also
whether the results equal those of DIR/<name> bit for bit."""
import os
import sys

import numpy as np

def packed_weight(r, bits, rows=70, cols=1100, groups=5, run=0, shape=(3, 5), swap=None, spread=0):
    """Words of random codes (each row one little-endian bit stream, as
    gptq.pack writes it), scales, zeros and a group map in any order (or,
    with ``run``, groups of ``run`` columns in order, but for the groups of
    the two columns ``swap`` exchanged), and inputs of ``shape`` x cols
    (each scaled by 2^i, i drawn from [-spread, spread])."""
    codes = r.integers(0, 1 << bits, size=(rows, cols))
    nwords = -(-cols * bits // 32)
    words = np.zeros((rows, nwords), dtype=np.uint64)
    for j in range(cols):
        bit = j * bits
        words[:, bit // 32] |= (codes[:, j].astype(np.uint64) << np.uint64(bit % 32)) & np.uint64(0xFFFFFFFF)
        if bit % 32 + bits > 32:
            words[:, bit // 32 + 1] |= codes[:, j].astype(np.uint64) >> np.uint64(32 - bit % 32)
    scales = r.uniform(0.01, 0.1, size=(rows, groups))
    zeros = r.integers(0, 1 << bits, size=(rows, groups)).astype(np.float64)
    g_idx = np.arange(cols) // run if run else r.integers(0, groups, size=cols)
    if swap:
        a, b = swap
        g_idx[a], g_idx[b] = g_idx[b], g_idx[a]
    if run:
        groups = int(g_idx.max()) + 1
        scales = r.uniform(0.01, 0.1, size=(rows, groups))
        zeros = r.integers(0, 1 << bits, size=(rows, groups)).astype(np.float64)
    x = r.standard_normal(shape + (cols,))
    if spread:
        x *= 2.0 ** r.integers(-spread, spread + 1, size=x.shape)
    return [x, words.astype(np.uint32).view(np.int32), scales, zeros, g_idx]


def dequantized(words, scales, zeros, g_idx, bits, cols):
    """The weight, from the words, in float32 as the kernel computes it."""
    w = words.astype(np.int64).view(np.uint64) & np.uint64(0xFFFFFFFF)
    codes = np.zeros((w.shape[0], cols), dtype=np.uint64)
    for j in range(cols):
        bit = j * bits
        lo = w[:, bit // 32]
        hi = w[:, bit // 32 + 1] if bit // 32 + 1 < w.shape[1] else np.zeros_like(lo)
        codes[:, j] = ((lo | (hi << np.uint64(32))) >> np.uint64(bit % 32)) & np.uint64((1 << bits) - 1)
    g = g_idx.astype(np.int64)
    s = scales.astype(np.float32)[:, g]
    z = zeros.astype(np.float32)[:, g]
    return (s * (codes.astype(np.float32) - z)).astype(np.float64)


def causal_attention(q, k, v):
    """softmax(0.25 q k^T, keys t <= query s) v per batch and head."""
    scores = 0.25 * np.einsum("bshd,bthd->bhst", q, k)
    future = np.arange(q.shape[1])[None, :] > np.arange(q.shape[1])[:, None]
    scores = np.where(future, -np.inf, scores)
    p = np.exp(scores - scores.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("bhst,bthd->bshd", p, v)


DTYPES = {"q3": [np.float32, np.int32, np.float32, np.float32, np.int32]}
for _name in ("q4", "q8", "q4_rows", "q4_rows_tail2", "q4_rows_tail3", "q4_rows_part", "q4_rows_long", "q4_rows_range", "q4_rows32", "q4_rows48", "q4_rows_swap", "q8_rows", "q8_rows_tail1", "q8_rows_tail3", "q8_rows_part", "q8_rows_long", "q8_rows32",
              "q2_rows", "q3_rows", "q5_rows", "q6_rows", "q7_rows"):
    DTYPES[_name] = DTYPES["q3"]
DTYPES["h16"] = DTYPES["h16_rows"] = [np.float32, np.float16]
DTYPES["hb16"] = DTYPES["hb16_rows"] = DTYPES["hb16_rows_tail3"] = [np.float32, np.int16]


def bfloat16_bits(r, shape):
    """Random bfloat16 values as their bits (int16): the upper halves of
    float32 values."""
    wide = r.standard_normal(shape).astype(np.float32)
    return (wide.view(np.uint32) >> 16).astype(np.uint16).view(np.int16)


def widened_bfloat16(bits):
    return (bits.view(np.uint16).astype(np.uint32) << 16).view(np.float32)

def linear_case(x_shape, rows, stored="f32"):
    """A linear layer: activations of ``x_shape`` times a weight of ``rows``
    rows stored in float32, float16 or bfloat16 (its bits)."""
    columns = x_shape[-1]
    if stored == "bf16":
        return (lambda r: [r.standard_normal(x_shape), bfloat16_bits(r, (rows, columns))],
                lambda x, bits: np.einsum("bsk,nk->bsn", x, widened_bfloat16(bits).astype(np.float64)))
    return (lambda r: [r.standard_normal(x_shape), r.standard_normal((rows, columns))],
            lambda x, w: np.einsum("bsk,nk->bsn", x, w.astype(np.float64)))


def packed_case(bits, **options):
    """A linear layer on a weight packed at ``bits`` (packed_weight's
    ``options``)."""
    return (lambda r: packed_weight(r, bits, **options),
            lambda x, wd, s, z, g: np.einsum("bsk,nk->bsn", x, dequantized(wd, s, z, g, bits, x.shape[2])))


CASES = {
    # name: (inputs, reference)
    "linear": linear_case((3, 5, 37), 70),
    # Rows, columns and K past whole tiles, panels and K chunks (1024): the
    # second chunk adds to what the first one stored.
    "linear_long": linear_case((2, 7, 1100), 70),
    # One row with a long K: the kernel must not read rows of A past the
    # end of the array, which gptq-run maps in place from the file.
    "linear_row": linear_case((1, 1, 4096), 3),
    "mix": (
        lambda r: [r.standard_normal((2, 3, 13, 11)), r.standard_normal((2, 11, 3, 7)),
                   r.standard_normal((2, 13, 3, 7))],
        lambda p, v, i: i + np.einsum("bhst,bthd->bshd", p, v),
    ),
    "matmul_at": (
        lambda r: [r.standard_normal((1100, 131)), r.standard_normal((1100, 65)),
                   r.standard_normal((131, 65))],
        lambda at, b, c: c + at.T @ b,
    ),
    # Causal attention over 150 positions: key panels cross the diagonal
    # mid-tile, and the mixing's 150 keys span two of the kernel's chunks.
    "attention": (
        lambda r: [r.standard_normal((2, 150, 3, 20)) for _ in range(3)],
        causal_attention,
    ),
    "q3": packed_case(3),
    "q4": packed_case(4),
    "q8": packed_case(8),
    # A decode step's shapes (a few rows of A): the rows kernels. 201 rows
    # of W: tasks of 16 rows, the last one of 9 (a partial group of four);
    # 1100 columns: a partial 16 (and, at 4 bits, a partial chunk of 128).
    "linear_rows": linear_case((1, 3, 1100), 201),
    # The float kernel takes a row's columns 64 at a time into four sums,
    # then the last one to three whole 16s one by one, then the ragged
    # rest: 1100 above (no whole 16 left, 12 ragged), 1000 (two, 8 ragged)
    # and 1008 (three, none ragged; also from bfloat16). Past 4096 columns
    # it takes four rows at a time (4200; 75 rows, the last task of 11).
    "linear_rows_tail2": linear_case((1, 2, 1000), 37),
    "linear_rows_tail3": linear_case((1, 1, 1008), 37),
    "linear_rows_long": linear_case((1, 2, 4200), 75),
    "q4_rows": packed_case(4, rows=201, run=128, shape=(1, 2)),
    # The 4-bit kernel for groups of 128 takes a row's chunks of 128
    # columns four at a time and the last one to three one by one: 6
    # chunks (two left, whole; groups of three chunks), 11 (three left, the
    # last partial) and 8 (the last of a four partial). Past 4096 columns
    # it takes four rows at a time (4400: 35 chunks, the last partial,
    # groups of two chunks; 75 rows, the last task of 11).
    "q4_rows_tail2": packed_case(4, rows=37, cols=768, run=384, shape=(1, 2)),
    "q4_rows_tail3": packed_case(4, rows=37, cols=1400, run=128, shape=(1, 1)),
    "q4_rows_part": packed_case(4, rows=37, cols=1000, run=128, shape=(1, 3)),
    "q4_rows_long": packed_case(4, rows=75, cols=4400, run=256, shape=(1, 2)),
    # Up to 4096 columns the 4-bit kernel for groups of 128 holds each
    # eight activations of a chunk as integers under one exponent (byte
    # dot products): activations spread over 2^-24 .. 2^24 within those
    # eights, 24 significant bits at the largest of each.
    "q4_rows_range": packed_case(4, rows=37, cols=1100, run=128, shape=(1, 2), spread=24),
    # Groups of 32 (the chunk kernels, 16 groups a chunk of 512 columns)
    # and of 48 (the 4-bit kernel in the tiled kernel's order).
    "q4_rows32": packed_case(4, rows=201, run=32, shape=(1, 4)),
    "q4_rows48": packed_case(4, rows=201, run=48, shape=(1, 2)),
    # Groups of 128 in order but for two columns far apart that trade
    # groups: not runs, so the tiled kernel (same bits as for 5 rows of A).
    "q4_rows_swap": packed_case(4, run=128, swap=(300, 1000), shape=(1, 2)),
    # 8 bits, groups of 64 (the 8-bit kernel, its last chunk partial) and
    # of 32 (the tiled kernel).
    "q8_rows": packed_case(8, rows=201, run=64, shape=(1, 3)),
    # Like the 4-bit kernel, the 8-bit one takes a row's chunks (64
    # columns) four at a time and the last one to three one by one: 18
    # chunks above (two left, the last partial), 17 (one left, whole), 19
    # (three left, groups of two chunks) and 16 (the last of a four
    # partial). Past 3072 columns it takes four rows at a time (3300: 52
    # chunks, the last partial; 75 rows, the last task of 11).
    "q8_rows_tail1": packed_case(8, rows=37, cols=1088, run=64, shape=(1, 2)),
    "q8_rows_tail3": packed_case(8, rows=37, cols=1216, run=128, shape=(1, 1)),
    "q8_rows_part": packed_case(8, rows=37, cols=1000, run=64, shape=(1, 3)),
    "q8_rows_long": packed_case(8, rows=75, cols=3300, run=128, shape=(1, 2)),
    "q8_rows32": packed_case(8, rows=201, run=32, shape=(1, 1)),
    # 2, 3, 5, 6 and 7 bits (the chunk kernels; 3, 5, 6 and 7 have codes
    # that straddle words), groups of 32 .. 1024 columns; 640 and 96 do not
    # divide a chunk (lanes of one chunk in groups of two runs).
    "q2_rows": packed_case(2, rows=201, run=64, shape=(1, 2)),
    "q3_rows": packed_case(3, rows=201, run=128, shape=(1, 3)),
    "q5_rows": packed_case(5, rows=201, run=1024, shape=(1, 1)),
    "q6_rows": packed_case(6, rows=201, run=640, shape=(1, 4)),
    "q7_rows": packed_case(7, rows=201, run=96, shape=(1, 2)),
    "h16_rows": linear_case((1, 1, 1100), 200, "f16"),
    "hb16_rows": linear_case((1, 2, 1100), 200, "bf16"),
    "hb16_rows_tail3": linear_case((1, 2, 1008), 37, "bf16"),
    # Weights stored in half precision, K past one of the kernel's chunks,
    # N past whole panels.
    "h16": linear_case((3, 5, 1100), 70, "f16"),
    "hb16": linear_case((3, 5, 1100), 70, "bf16"),
}


# The rows cases, and whether their rows kernel sums in the tiled kernel's
# order (the same bits as the tiled kernel's for the same rows of A, which
# each case's "-tiles" twin gives with A grown to 5 rows: the 4-bit kernel
# for groups of 16 .. 112 columns that are not multiples of 32, and
# weights that take the tiled kernel) or along K (the float kernels, the
# 4-bit kernel for groups of 128 columns, the 8-bit one for groups of 64
# and the chunk kernels of 2 to 7 bits for groups of 32: the same weights,
# sums that agree to rounding).
ROWS = {"linear_rows": False, "linear_rows_tail2": False, "linear_rows_tail3": False,
        "linear_rows_long": False, "hb16_rows_tail3": False, "q4_rows": False, "q4_rows_tail2": False, "q4_rows_tail3": False,
        "q4_rows_part": False, "q4_rows_long": False, "q4_rows_range": False, "q4_rows32": False, "q4_rows48": True,
        "q4_rows_swap": True, "q8_rows": False, "q8_rows_tail1": False,
        "q8_rows_tail3": False, "q8_rows_part": False, "q8_rows_long": False, "q8_rows32": True, "h16_rows": False,
        "hb16_rows": False, "q2_rows": False, "q3_rows": False, "q5_rows": False,
        "q6_rows": False, "q7_rows": False}


def main() -> int:
    mode, root = sys.argv[1], sys.argv[2]
    prefix = sys.argv[3] if len(sys.argv) > 3 else ""
    for name, (make, reference) in CASES.items():
        directory = os.path.join(root, prefix + name)
        if prefix and not os.path.isdir(directory):
            continue
        if mode == "make":
            os.makedirs(directory, exist_ok=True)
            inputs = make(np.random.default_rng(7))
            dtypes = DTYPES.get(name, [np.float32] * len(inputs))
            for i, (a, dtype) in enumerate(zip(inputs, dtypes)):
                np.save(os.path.join(directory, f"in{i}.npy"), np.asarray(a).astype(dtype))
            if name in ROWS:
                os.makedirs(directory + "-tiles", exist_ok=True)
                x = np.asarray(inputs[0])
                more = np.random.default_rng(8).standard_normal((1, 5 - x.shape[1], x.shape[2]))
                for i, (a, dtype) in enumerate(zip([np.concatenate([x, more], axis=1)] + inputs[1:], dtypes)):
                    np.save(os.path.join(directory + "-tiles", f"in{i}.npy"), np.asarray(a).astype(dtype))
            continue
        inputs = [np.load(os.path.join(directory, f"in{i}.npy"))
                  for i in range(len(make(np.random.default_rng(7))))]
        inputs = [a.astype(np.float64) if a.dtype == np.float32 else a for a in inputs]
        want = reference(*inputs)
        got = np.load(os.path.join(directory, "out", "0.npy"))
        ok = got.shape == want.shape and bool(np.isfinite(got).all()) and \
            float(np.abs(got - want).max()) <= 1e-5 * float(np.abs(want).max())
        line = f"{name} {got.shape} ok {ok}"
        if prefix:
            # The same products from the same weight values: equal bit for
            # bit to the case without the prefix (weight formed first).
            first = np.load(os.path.join(root, name, "out", "0.npy"))
            line += f" same {bool(np.array_equal(got, first))}"
        if name in ROWS and not prefix:
            tiles = np.load(os.path.join(root, name + "-tiles", "out", "0.npy"))[:, : got.shape[1]]
            if ROWS[name]:
                line += f" tiles-same {bool(np.array_equal(got, tiles))}"
            else:
                close = float(np.abs(got - tiles).max()) <= 1e-5 * float(np.abs(tiles).max())
                line += f" tiles-close {close}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
