"""Checks executables made by gptq-compile against the reference's golden cases.

Usage: golden_aot.py GPTQ_COMPILE GOLDEN_DIR WORK_DIR [--device cpu|cuda]
                     [--build-only | --run-only]

For every case, writes a module whose entry runs gptq.quantize_layer with
the case's settings on dynamically sized W and H and returns the codes,
grids, g_idx, dequantized weights, loss and success flag; compiles it with
gptq-compile into an executable; runs that (no MLIR involved) on the case's
W.npy and H.npy; and checks the golden criterion of golden.py, that the
factorization succeeded, and that codes, scales, zeros and g_idx
reconstruct the dequantized weights exactly (golden.check_outputs). Prints one line per case and
exits non-zero on any failure.

--device cuda compiles for the GPU (gptq-compile --device cuda). The two
halves also run apart, for a GPU machine without MLIR: --build-only writes
WORK_DIR/<case>/quantize and stops; --run-only (GPTQ_COMPILE unused, give
any word) runs and checks the executables already in WORK_DIR.
"""

import argparse

import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import golden  # noqa: E402

MODULE = """\
func.func @quantize(%w: tensor<?x?xf32>, %h: tensor<?x?xf32>)
    -> (tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>,
        tensor<?x?xf32>, tensor<1xf32>, tensor<1xi8>) {
  %codes, %s, %z, %g, %loss, %ok = gptq.quantize_layer %w, %h
      {config = #gptq.config<CONFIG>}
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xi32>
  %q = gptq.dequantize %codes, %s, %z, %g
      : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xi32> -> tensor<?x?xf32>
  %l = tensor.from_elements %loss : tensor<1xf32>
  %ok8 = arith.extui %ok : i1 to i8
  %o = tensor.from_elements %ok8 : tensor<1xi8>
  return %codes, %s, %z, %g, %q, %l, %o
      : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>,
        tensor<?x?xf32>, tensor<1xf32>, tensor<1xi8>
}
"""


def config_text(case):
    keys = ["bits = %d" % case["bits"], "group_size = %d" % case["group_size"],
            "percdamp = %r" % case["percdamp"], "block_size = %d" % case["block_size"]]
    keys += ["%s = true" % k for k in ("sym", "act_order", "static_groups") if case[k]]
    return ", ".join(keys)


def check_case(compiler, case_dir, work, device="cpu", build=True, run=True):
    case = json.load(open(os.path.join(case_dir, "case.json")))
    name = os.path.basename(case_dir.rstrip("/"))
    folder = os.path.join(work, name)
    os.makedirs(folder, exist_ok=True)
    exe = os.path.join(folder, "quantize")
    if build:
        module = os.path.join(folder, "layer.mlir")
        with open(module, "w") as f:
            f.write(MODULE.replace("CONFIG", config_text(case)))
        subprocess.run([compiler, module, "--entry", "quantize", "--device", device,
                        "-o", exe], check=True)
    if not run:
        print("%-34s built %s" % (name, exe))
        return True
    out = os.path.join(folder, "out")
    run = subprocess.run([exe, "--input", os.path.join(case_dir, "W.npy"),
                          "--input", os.path.join(case_dir, "H.npy"), "--output-dir", out],
                         stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:
        print("%-34s FAIL: the executable exited with %d: %s"
              % (name, run.returncode, run.stderr.strip()))
        return False
    codes, scales, zeros, g, q, loss, ok = [np.load(os.path.join(out, "%d.npy" % i))
                                            for i in range(7)]
    outputs = {"codes": codes.view(np.uint8), "scales": scales, "zeros": zeros,
               "g_idx": g, "dequantized": q}
    ref = np.load(os.path.join(case_dir, "Q_ref.npy"))
    h = np.load(os.path.join(case_dir, "H.npy"))
    failed = [] if ok[0] == 1 else ["the factorization failed"]
    return golden.check_outputs(name, case, outputs, float(loss[0]), ref, h, failed)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("compiler")
    p.add_argument("golden")
    p.add_argument("work")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--build-only", action="store_true")
    mode.add_argument("--run-only", action="store_true")
    a = p.parse_args()
    cases = golden.list_cases(a.golden)
    ok = all([check_case(a.compiler, os.path.join(a.golden, c), a.work, a.device,
                         build=not a.run_only, run=not a.build_only)
              for c in cases])
    what = "built" if a.build_only else ("all passed" if ok else "FAILED")
    print("golden-aot: %d cases, %s" % (len(cases), what))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
