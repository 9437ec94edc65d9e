"""Checks gptq-quantize-layer against the reference's golden layer cases.

Usage: golden.py TOOL GOLDEN_DIR WORK_DIR [--block-size B] [--case NAME]
                 [--kernels cpu|portable] [--device cpu|cuda|cuda-emulated]

For every case (or one), runs the tool with the case's settings and checks:
- at least 99.9% of entries satisfy |Q - Q_ref| <= 1e-5 |Q_ref| + 1e-7;
- the loss agrees with the reference loss within 1e-4 relative;
- codes, scales, zeros and g_idx reconstruct dequantized.npy exactly;
- g_idx follows the checkpoint layout of the semantics (section 3, step 9).
Prints one line per case and exits non-zero on any failure.
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np


#: The golden criterion: at least MIN_MATCH of the entries within
#: 1e-5 |Q_ref| + 1e-7 of Q_ref, and the loss within LOSS_RTOL relative.
MIN_MATCH = 0.999
LOSS_RTOL = 1e-4


def close_entries(q, ref):
    """Where |q - ref| <= 1e-5 |ref| + 1e-7 (a boolean array)."""
    return np.abs(q - ref) <= 1e-5 * np.abs(ref) + 1e-7


def criterion(q, ref, loss, ref_loss):
    """The golden criterion for q and loss against ref and ref_loss:
    (fraction of entries within tolerance, relative loss difference, ok)."""
    frac = float(close_entries(q, ref).mean())
    rel = abs(loss - ref_loss) / abs(ref_loss)
    return frac, rel, frac >= MIN_MATCH and rel <= LOSS_RTOL


def list_cases(golden):
    """The sorted names of the case folders under golden (those with a case.json)."""
    return sorted(d for d in os.listdir(golden)
                  if os.path.isfile(os.path.join(golden, d, "case.json")))


def run_quantize_layer(tool, weight_path, hessian_path, out_dir, flags):
    """Runs gptq-quantize-layer (stderr discarded) and returns its report.json."""
    subprocess.run([tool, "--weight", weight_path, "--hessian", hessian_path,
                    "--out-dir", out_dir] + list(flags),
                   check=True, stderr=subprocess.DEVNULL)
    return json.load(open(os.path.join(out_dir, "report.json")))


def run_tool(tool, case_dir, out_dir, case, block_size=None, kernels=None,
             device=None):
    flags = ["--kernels", kernels] if kernels else []
    flags += ["--device", device] if device else []
    flags += ["--bits", str(case["bits"]), "--group-size", str(case["group_size"]),
             "--percdamp", str(case["percdamp"]),
             "--block-size", str(block_size or case["block_size"])]
    for flag in ("sym", "act_order", "static_groups"):
        if case[flag]:
            flags.append("--" + flag.replace("_", "-"))
    report = run_quantize_layer(tool, os.path.join(case_dir, "W.npy"),
                                os.path.join(case_dir, "H.npy"), out_dir, flags)
    return {name: np.load(os.path.join(out_dir, name + ".npy"))
            for name in ("codes", "scales", "zeros", "g_idx", "dequantized")}, \
        report


def expected_g_idx(case, cols, h):
    gs = case["group_size"]
    if gs == -1:
        return np.zeros(cols, np.int32)
    if not case["act_order"] or case["static_groups"]:
        return (np.arange(cols) // gs).astype(np.int32)
    d = np.diag(h).copy()
    d[d == 0] = 1
    perm = np.argsort(-d, kind="stable")
    invperm = np.argsort(perm)
    return (invperm // gs).astype(np.int32)


def check_outputs(name, case, out, loss, ref, h, extra_problems=()):
    """Applies the golden checks to a tool's outputs (a dict of codes, scales,
    zeros, g_idx and dequantized) and loss, prints the case's line and
    returns whether it passed."""
    q = out["dequantized"]
    problems = list(extra_problems)
    frac, rel, _ = criterion(q, ref, loss, case["reference_loss"])
    if frac < MIN_MATCH:
        problems.append("only %.5f of entries match Q_ref" % frac)
    if rel > LOSS_RTOL:
        problems.append("loss %r vs reference %r" % (loss, case["reference_loss"]))
    codes = out["codes"]
    if codes.dtype != np.uint8 or codes.shape != ref.shape:
        problems.append("codes are %s %s" % (codes.dtype, codes.shape))
    if codes.max() > 2 ** case["bits"] - 1:
        problems.append("a code exceeds 2^bits - 1")
    g = out["g_idx"]
    if g.dtype != np.int32 or not np.array_equal(g, expected_g_idx(case, ref.shape[1], h)):
        problems.append("g_idx differs from the checkpoint layout")
    groups = 1 if case["group_size"] == -1 else -(-ref.shape[1] // case["group_size"])
    if out["scales"].shape != (ref.shape[0], groups):
        problems.append("scales shape %s" % (out["scales"].shape,))
    recon = out["scales"][:, g] * (codes.astype(np.float32) - out["zeros"][:, g])
    if not np.array_equal(recon, q):
        problems.append("codes, scales, zeros and g_idx do not reconstruct "
                        "dequantized.npy exactly")
    print("%-34s match %.5f  loss rel %.1e  %s" % (
        name, frac, rel, "ok" if not problems else "FAIL: " + "; ".join(problems)))
    return not problems


def check_case(tool, case_dir, work, block_size=None, kernels=None, device=None):
    case = json.load(open(os.path.join(case_dir, "case.json")))
    name = os.path.basename(case_dir.rstrip("/"))
    out, report = run_tool(tool, case_dir, os.path.join(work, name), case,
                           block_size, kernels, device)
    ref = np.load(os.path.join(case_dir, "Q_ref.npy"))
    h = np.load(os.path.join(case_dir, "H.npy"))
    return check_outputs(name, case, out, report["loss"], ref, h)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("tool")
    p.add_argument("golden")
    p.add_argument("work")
    p.add_argument("--block-size", type=int)
    p.add_argument("--case")
    p.add_argument("--kernels", choices=("cpu", "portable"))
    p.add_argument("--device", choices=("cpu", "cuda", "cuda-emulated"))
    a = p.parse_args()
    cases = list_cases(a.golden)
    if a.case:
        cases = [a.case]
    ok = all([check_case(a.tool, os.path.join(a.golden, c), a.work, a.block_size,
                         a.kernels, a.device)
              for c in cases])
    print("golden: %d cases, %s" % (len(cases), "all passed" if ok else "FAILED"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
