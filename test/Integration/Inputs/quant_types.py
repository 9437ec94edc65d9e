"""Quantized weights in gptq-op form, and their check after gptq-to-quant-types.

Usage:
  quant_types.py write DIR   writes DIR/weights.mlir: @weights returns, for
                             each case, gptq.dequantize of gptq.unpack of
                             constants; DIR/reference.npz the weights numpy
                             computes.
  quant_types.py check DIR   compares the results of both forms (gptq-run
                             output folders DIR/gptq and DIR/quant) with the
                             reference; prints a line per case.

The cases: bits 2, 3, 4 and 8; one grid per row, groups that divide the
input, groups with a short last one, and act-order (g_idx of a random column
permutation, as GPTQ makes it).
"""
import sys

import numpy as np

ROWS, GROUP = 5, 4


def cases():
    rng = np.random.default_rng(12)
    for bits in (2, 3, 4, 8):
        maxq = 2**bits - 1
        for layout, cols in (("row", 12), ("groups", 12), ("short", 11),
                             ("act-order", 11)):
            if layout == "row":
                g_idx = np.zeros(cols, np.int32)
            elif layout == "act-order":
                perm = rng.permutation(cols)
                g_idx = np.empty(cols, np.int32)
                g_idx[perm] = np.arange(cols) // GROUP
            else:
                g_idx = (np.arange(cols) // GROUP).astype(np.int32)
            groups = int(g_idx.max()) + 1
            codes = rng.integers(0, maxq + 1, size=(ROWS, cols))
            scales = rng.uniform(0.01, 1.0, size=(ROWS, groups)).astype(np.float32)
            zeros = rng.integers(0, maxq + 1, size=(ROWS, groups)).astype(np.float32)
            yield f"bits {bits} {layout}", bits, codes, scales, zeros, g_idx


def pack(codes, bits):
    rows, cols = codes.shape
    words = (cols * bits + 31) // 32
    out = np.zeros((rows, words), np.uint32)
    for r in range(rows):
        stream = 0
        for j in range(cols):
            stream |= int(codes[r, j]) << (j * bits)
        for w in range(words):
            out[r, w] = (stream >> (32 * w)) & 0xFFFFFFFF
    return out.view(np.int32)


def dense(a):
    return "dense<" + np.array2string(
        a, separator=", ", threshold=1 << 20, max_line_width=1 << 20,
        floatmode="unique") + ">"


def write(folder):
    lines, results, reference = [], [], {}
    for i, (name, bits, codes, scales, zeros, g_idx) in enumerate(cases()):
        rows, cols = codes.shape
        groups = scales.shape[1]
        words = pack(codes, bits)
        w_t = f"tensor<{rows}x{words.shape[1]}xi32>"
        g_t = f"tensor<{rows}x{groups}xf32>"
        lines += [
            f"  %w{i} = arith.constant {dense(words)} : {w_t}",
            f"  %n{i} = arith.constant {cols} : index",
            f"  %s{i} = arith.constant {dense(scales)} : {g_t}",
            f"  %z{i} = arith.constant {dense(zeros)} : {g_t}",
            f"  %g{i} = arith.constant {dense(g_idx)} : tensor<{cols}xi32>",
            f"  %c{i} = gptq.unpack %w{i} columns %n{i} bits {bits} : {w_t} -> tensor<{rows}x{cols}xi8>",
            f"  %r{i} = gptq.dequantize %c{i}, %s{i}, %z{i}, %g{i} : tensor<{rows}x{cols}xi8>, {g_t}, tensor<{cols}xi32> -> tensor<{rows}x{cols}xf32>",
        ]
        results.append((f"%r{i}", f"tensor<{rows}x{cols}xf32>"))
        group = scales[:, g_idx]
        reference[str(i)] = (codes.astype(np.float32) - zeros[:, g_idx]) * group
    names = ", ".join(r for r, _ in results)
    types = ", ".join(t for _, t in results)
    with open(f"{folder}/weights.mlir", "w") as f:
        f.write(f"func.func @weights() -> ({types}) {{\n")
        f.write("\n".join(lines) + "\n")
        f.write(f"  return {names} : {types}\n}}\n")
    np.savez(f"{folder}/reference.npz", **reference)


def check(folder):
    reference = np.load(f"{folder}/reference.npz")
    for i, (name, *_) in enumerate(cases()):
        want = reference[str(i)]
        ops = np.load(f"{folder}/gptq/{i}.npy")
        quant = np.load(f"{folder}/quant/{i}.npy")
        print(name, "ops", np.array_equal(ops, want),
              "quant", np.array_equal(quant, want))


if __name__ == "__main__":
    {"write": write, "check": check}[sys.argv[1]](sys.argv[2])
