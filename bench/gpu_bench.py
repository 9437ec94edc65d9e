"""GPTQ of whole layers on an NVIDIA GPU: ours against PyTorch, same run.

Usage (on the GPU machine, from the repository root; see bench/README.md):

    python3 bench/gpu_bench.py --exe build/gpu-check/layer --work DIR \
        [--sizes 4096x4096,4096x11008,11008x4096] [--repeats 3] [--json FILE]

--exe is an executable of gptq-compile --device cuda whose entry takes W
(rows x cols) and H (cols x cols) and returns the layer's outputs with the
loss last but one (bench/build_gpu_check.sh makes it: 4 bits, group 128,
act-order, the Hessian given). For each size it makes a layer as
bench/bench_quantize.py does (seeded correlated activations, H = 2/n X^T X,
W ~ N(0, 0.02^2)), runs ours --repeats times in one process (best call
counts; the first pays for loading the kernels and faulting in managed
memory) and bench/torch_gptq.py's implementation of the reference on
cuda with TF32 off, then on, --torch-repeats times each (best counts; the
first pays for cuBLAS and cuSOLVER's start-up), and prints seconds, the ratio, and the work model's
TFLOP/s against the chip's FP32 peak, and our kernel launches per call
(the runtime's count, which the executable prints with --time). The two
losses are compared as a check that both solved the same problem. Needs numpy and PyTorch with CUDA;
no MLIR.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

#: FP32 (non-tensor) peak of the chips this is run on, TFLOP/s, from
#: NVIDIA's data sheets (H100/H200 SXM: 67).
FP32_PEAK = {"H200": 67.0, "H100": 67.0}

BLOCK = 128


def work_flops(rows, cols, block=BLOCK):
    """The work model of docs/performance.md (Hessian given)."""
    return cols ** 3 + rows * cols ** 2 + rows * cols * block / 2


def make_layer(rows, cols, seed, folder, tokens_factor=2):
    """W (rows x cols) and H (cols x cols) as bench_quantize.make_rect_layer
    makes them, on the GPU when PyTorch has one (X^T X of an 11008-column
    layer takes minutes on a CPU; the GPU's generator draws other numbers)."""
    try:
        import torch
        cuda = torch.cuda.is_available()
    except ImportError:
        cuda = False
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = False
        g = torch.Generator(device="cuda").manual_seed(seed + rows * 7 + cols)
        tokens = tokens_factor * cols
        rank = max(cols // 8, 1)
        Z = torch.randn(tokens, rank, generator=g, device="cuda")
        B = torch.randn(rank, cols, generator=g, device="cuda") / rank ** 0.5
        X = Z @ B + 0.5 * torch.randn(tokens, cols, generator=g, device="cuda")
        out = torch.randperm(cols, generator=g, device="cuda")[:max(cols // 256, 1)]
        X[:, out] *= 10.0
        H = (2.0 / tokens) * (X.T @ X)
        H = (H + H.T) * 0.5
        W = 0.02 * torch.randn(rows, cols, generator=g, device="cuda")
        wp, hp = os.path.join(folder, "W.npy"), os.path.join(folder, "H.npy")
        np.save(wp, W.cpu().numpy().astype(np.float32))
        np.save(hp, H.cpu().numpy().astype(np.float32))
        return wp, hp
    from bench_quantize import make_rect_layer
    wp, hp, _ = make_rect_layer(rows, cols, tokens_factor, seed + rows * 7 + cols, folder)
    return wp, hp


def run_ours(exe, wp, hp, out, repeats, timeout):
    p = subprocess.run([exe, "--input", wp, "--input", hp, "--output-dir", out,
                        "--repeat", str(repeats), "--time"],
                       capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError("ours failed: " + p.stderr.strip())
    line = [l for l in p.stderr.splitlines() if l.startswith("run_seconds")][-1]
    seconds = [float(x) for x in line.split()[1:]]
    counted = [l for l in p.stderr.splitlines() if l.startswith("kernel_launches")]
    launches = int(counted[-1].split()[1]) if counted else None
    results = sorted(f for f in os.listdir(out) if f.endswith(".npy"))
    loss = float(np.load(os.path.join(out, "%d.npy" % (len(results) - 2)))[0])
    return seconds, loss, launches


def run_torch(wp, hp, repeats, tf32=False):
    import torch
    from torch_gptq import gptq_quantize
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    W = torch.from_numpy(np.load(wp)).cuda()
    H = torch.from_numpy(np.load(hp)).cuda()
    seconds, loss = [], None
    for _ in range(repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        _, loss = gptq_quantize(W, H, bits=4, group_size=128, act_order=True)
        torch.cuda.synchronize()
        seconds.append(time.perf_counter() - t0)
    return seconds, loss


def chip_peak():
    try:
        import torch
        name = torch.cuda.get_device_name(0)
    except Exception as e:  # no torch or no GPU: the figures say so
        return "unknown (%s)" % e, None
    for key, peak in FP32_PEAK.items():
        if key in name:
            return name, peak
    return name, None


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--exe", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--sizes", default="4096x4096,4096x11008,11008x4096,4096x14336",
                    help="rows x cols of each layer (default: %(default)s)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="calls of ours in one process; the best counts (default: %(default)s)")
    ap.add_argument("--torch-repeats", type=int, default=3,
                    help="calls of PyTorch's; the best counts, the first pays for "
                         "cuBLAS/cuSOLVER start-up (default: %(default)s)")
    ap.add_argument("--timeout", type=float, default=60,
                    help="seconds allowed to each run of ours")
    ap.add_argument("--no-torch", action="store_true",
                    help="measure ours only (another build of it, say)")
    ap.add_argument("--json")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    name, peak = chip_peak()
    print("device: %s; FP32 peak %s TFLOP/s" % (name, peak if peak else "unknown"))
    print("| layer | ours s (best of %d) | ours TFLOP/s | %% of FP32 peak | PyTorch s (best of %d) | ratio | PyTorch TF32 s | ratio | loss ours | loss PyTorch | our launches |"
          % (a.repeats, a.torch_repeats))
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    rows_out = []
    for size in a.sizes.split(","):
        rows, cols = (int(x) for x in size.lower().split("x"))
        folder = os.path.join(a.work, size)
        os.makedirs(folder, exist_ok=True)
        wp, hp = make_layer(rows, cols, 0, folder)
        entry = {"rows": rows, "cols": cols, "work_flops": work_flops(rows, cols)}
        try:
            ours, loss, launches = run_ours(a.exe, wp, hp, os.path.join(folder, "out"),
                                            a.repeats, a.timeout)
            entry.update(ours_seconds=ours, ours_loss=loss, ours_launches=launches)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            entry.update(ours_error=str(e))
        for tf32, key in ((False, "torch"), (True, "torch_tf32")):
            if a.no_torch:
                entry[key + "_error"] = "not run"
                continue
            try:
                ts, tl = run_torch(wp, hp, a.torch_repeats, tf32=tf32)
                entry.update({key + "_seconds": ts, key + "_loss": tl})
            except Exception as e:  # reported, not fatal: the other figures stand
                entry[key + "_error"] = str(e)
        best = min(entry["ours_seconds"]) if "ours_seconds" in entry else None
        tbest = min(entry["torch_seconds"]) if "torch_seconds" in entry else None
        t32 = min(entry["torch_tf32_seconds"]) if "torch_tf32_seconds" in entry else None
        tflops = entry["work_flops"] / best / 1e12 if best else None
        cells = [
            size,
            "%.4f" % best if best else entry.get("ours_error", "-"),
            "%.2f" % tflops if tflops else "-",
            "%.1f%%" % (100 * tflops / peak) if tflops and peak else "-",
            "%.4f" % tbest if tbest else entry.get("torch_error", "-"),
            "%.1fx" % (tbest / best) if best and tbest else "-",
            "%.4f" % t32 if t32 else entry.get("torch_tf32_error", "-"),
            "%.1fx" % (t32 / best) if best and t32 else "-",
            "%.6g" % entry["ours_loss"] if "ours_loss" in entry else "-",
            "%.6g" % entry["torch_loss"] if "torch_loss" in entry else "-",
            str(entry["ours_launches"]) if entry.get("ours_launches") is not None else "-",
        ]
        print("| " + " | ".join(cells) + " |", flush=True)
        rows_out.append(entry)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": name, "fp32_peak_tflops": peak, "layers": rows_out}, f,
                      indent=1)


if __name__ == "__main__":
    main()
