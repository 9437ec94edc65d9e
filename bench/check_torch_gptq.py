"""Check bench/torch_gptq.py against the golden reference cases.

For every folder in test/golden (or --golden DIR): load W.npy, H.npy,
Q_ref.npy and case.json, run gptq_quantize with the case's settings, and apply
the golden criterion of test/golden/README.md:

  * at least 99.9% of entries satisfy |Q - Q_ref| <= 1e-5 * |Q_ref| + 1e-7;
  * the loss agrees with reference_loss within 1e-4 relative.

Exit status 0 when every case passes, 1 otherwise.

    .venv/bin/python bench/check_torch_gptq.py [--golden test/golden]
"""

import argparse
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "test", "Integration", "Inputs"))
import golden  # noqa: E402
from torch_gptq import gptq_quantize  # noqa: E402

DEFAULT_GOLDEN = os.path.normpath(os.path.join(HERE, "..", "test", "golden"))


def check_case(folder):
    case = json.load(open(os.path.join(folder, "case.json")))
    W = np.load(os.path.join(folder, "W.npy"))
    H = np.load(os.path.join(folder, "H.npy"))
    Qref = np.load(os.path.join(folder, "Q_ref.npy"))
    Q, loss = gptq_quantize(
        torch.from_numpy(W), torch.from_numpy(H), bits=case["bits"],
        group_size=case["group_size"], sym=case["sym"],
        act_order=case["act_order"], static_groups=case["static_groups"],
        percdamp=case["percdamp"], block_size=case["block_size"])
    Q = Q.numpy()
    ref_loss = case["reference_loss"]
    frac, rel, passed = golden.criterion(Q, Qref, loss, ref_loss)
    bad = int((~golden.close_entries(Q, Qref)).sum())
    return passed, frac, bad, loss, ref_loss, rel


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--golden", default=DEFAULT_GOLDEN)
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    folders = golden.list_cases(a.golden)
    if not folders:
        print(f"no golden cases under {a.golden}", file=sys.stderr)
        return 1
    print("| case | entries within tol | mismatched | loss | reference loss | rel. diff | result |")
    print("|---|---|---|---|---|---|---|")
    n_pass = n_fail = 0
    for d in folders:
        passed, frac, bad, loss, ref_loss, rel = check_case(os.path.join(a.golden, d))
        n_pass += passed
        n_fail += not passed
        print(f"| {d} | {100 * frac:.3f}% | {bad} | {loss:.7g} | {ref_loss:.7g} "
              f"| {rel:.2e} | {'PASS' if passed else 'FAIL'} |")
    print(f"{n_pass} passed, {n_fail} failed")
    return 0 if n_fail == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
