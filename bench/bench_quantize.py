"""Benchmark: one GPTQ layer quantization, ours vs PyTorch vs the machine's GEMM rate.

For each size n (rows = cols = n; --sizes, default 1024,2048,4096) it makes a
synthetic layer (fixed seed): W ~ N(0, 1) scaled, and an SPD Hessian
H = 2/n_tokens * X^T X from random correlated activations X (low-rank mixing
plus noise, a few outlier channels), n_tokens = --tokens-factor * cols >= 2*cols.
Both are saved as .npy in a temporary folder. The configuration is 4 bits,
group size 128, act-order, asymmetric, percdamp 0.01, block 128.

Measured in the same run:

  a. ours: `build/bin/gptq-quantize-layer --weight W.npy --hessian H.npy
     --out-dir DIR --bits 4 --group-size 128 --act-order` (--tool to override),
     best over --repeats of `seconds` from DIR/report.json (the quantization
     itself; `compile_seconds` is reported separately).
  b. PyTorch (bench/torch_gptq.py, the reference's algorithm): each setting
     in its own subprocess, torch.set_num_threads(T) with OMP_NUM_THREADS,
     OPENBLAS_NUM_THREADS and MKL_NUM_THREADS = T, T in --torch-threads
     (default 1,2), and with the OpenBLAS kernel override
     (OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE) kept as the environment has it and
     unset; best of --torch-repeats per setting, and the best setting.
  c. the single-precision GEMM rate: numpy and torch sgemm at --gemm-sizes
     (default 2048,4096), 1 and 2 threads, OPENBLAS_CORETYPE and
     OPENBLAS_L2_SIZE unset in that subprocess; GFLOP/s = 2 n^3 / t.

Work model (docs/gptq-semantics.md section 5, Hessian given, no accumulation):
    cols^3                       the three factorizations together
  + rows * cols^2                the lazy batch updates
  + rows * cols * block / 2      the in-block rank-1 updates (block = 128)
The same figure divides both times, so GFLOP/s ratios equal time ratios.
An implementation may do less work than the model (e.g. fewer flops in the
factorizations); the figure is a yardstick, not a count of what ran.

Run from the repository root:
    .venv/bin/python bench/bench_quantize.py [--sizes 1024,2048] [--skip-ours]
"""

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
BLOCK = 128
BITS = 4
GROUP = 128
OPENBLAS_OVERRIDE = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


# --------------------------------------------------------------------------
# Helpers run inside worker subprocesses.

def _blas_info():
    try:
        import threadpoolctl
    except ImportError:
        return "threadpoolctl not installed"
    parts = []
    for p in threadpoolctl.threadpool_info():
        words = [p.get("internal_api"), p.get("version"), p.get("architecture"),
                 f"threads={p.get('num_threads')}"]
        parts.append(" ".join(str(w) for w in words if w))
    return "; ".join(sorted(parts))


def _worker_torch(a):
    import numpy as np
    import torch
    sys.path.insert(0, HERE)
    from torch_gptq import gptq_quantize
    torch.set_num_threads(a.threads)
    W = torch.from_numpy(np.load(a.weight))
    H = torch.from_numpy(np.load(a.hessian))
    times, loss = [], None
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        Q, loss = gptq_quantize(W, H, bits=BITS, group_size=GROUP, sym=False,
                                act_order=True, static_groups=False,
                                percdamp=0.01, block_size=BLOCK)
        times.append(time.perf_counter() - t0)
    if a.save_q:
        np.save(a.save_q, Q.numpy())
    print(json.dumps({"seconds": times, "loss": loss,
                      "torch_version": torch.__version__.split("+")[0],
                      "torch_threads": torch.get_num_threads(),
                      "blas": _blas_info()}))


def _worker_gemm(a):
    import numpy as np
    import torch
    torch.set_num_threads(a.threads)
    out = []
    rng = np.random.default_rng(0)
    for n in a.gemm_sizes:
        A = rng.standard_normal((n, n), dtype=np.float32)
        B = rng.standard_normal((n, n), dtype=np.float32)
        C = np.empty((n, n), dtype=np.float32)
        reps = 5 if n <= 2048 else 3
        libs = ("torch",) if a.no_numpy else ("numpy", "torch")
        for lib in libs:
            if lib == "numpy":
                f = lambda: np.matmul(A, B, out=C)  # noqa: E731
            else:
                tA, tB, tC = torch.from_numpy(A), torch.from_numpy(B), torch.from_numpy(C)
                f = lambda: torch.mm(tA, tB, out=tC)  # noqa: E731
            f()  # warm up
            best = float("inf")
            for _ in range(reps):
                t0 = time.perf_counter()
                f()
                best = min(best, time.perf_counter() - t0)
            name = "numpy " + np.__version__ if lib == "numpy" else \
                "torch " + torch.__version__.split("+")[0]
            out.append({"n": n, "lib": name, "seconds": best,
                        "gflops": 2.0 * n ** 3 / best / 1e9})
    print(json.dumps({"results": out, "torch_threads": torch.get_num_threads(),
                      "blas": _blas_info()}))


# --------------------------------------------------------------------------
# Driver.

QUIET = {"max_wait": 0.0, "threshold": 0.15, "log": []}


def cpu_busy(dt=0.5):
    """Fraction of all cores busy over dt seconds (from /proc/stat); None if unknown."""
    def snap():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + (v[4] if len(v) > 4 else 0)
    try:
        t0, i0 = snap()
        time.sleep(dt)
        t1, i1 = snap()
    except OSError:
        return None
    return 1.0 - (i1 - i0) / max(t1 - t0, 1)


def wait_quiet(what):
    """Before a measurement: wait (up to --wait-quiet s) for the other work on the
    machine to fall below the threshold; log what the cores were doing."""
    deadline = time.monotonic() + QUIET["max_wait"]
    while True:
        busy = cpu_busy()
        if busy is None or busy <= QUIET["threshold"] or time.monotonic() >= deadline:
            break
        time.sleep(2.0)
    QUIET["log"].append((what, busy))
    return busy


def work_flops(rows, cols, block=BLOCK):
    return cols ** 3 + rows * cols ** 2 + rows * cols * block / 2


def make_layer(n, tokens_factor, seed, folder):
    """An n x n layer: W.npy and H.npy in folder (see make_rect_layer)."""
    return make_rect_layer(n, n, tokens_factor, seed + n, folder)


def make_rect_layer(rows, cols, tokens_factor, seed, folder):
    """W (rows x cols) ~ N(0, 0.02^2) and H = 2/tokens X^T X (cols x cols) of
    tokens_factor * cols correlated activations, from the generator seed.
    Returns the two paths and the token count."""
    import numpy as np
    rng = np.random.default_rng(seed)
    tokens = tokens_factor * cols
    rank = max(cols // 8, 1)
    # Correlated activations: a low-rank mix plus independent noise, with a
    # few outlier channels (as in LLM activations).
    Z = rng.standard_normal((tokens, rank), dtype=np.float32)
    B = rng.standard_normal((rank, cols), dtype=np.float32) / np.float32(np.sqrt(rank))
    X = Z @ B
    X += np.float32(0.5) * rng.standard_normal((tokens, cols), dtype=np.float32)
    out = rng.choice(cols, size=max(cols // 256, 1), replace=False)
    X[:, out] *= np.float32(10.0)
    H = (np.float32(2.0 / tokens) * (X.T @ X)).astype(np.float32)
    H = ((H + H.T) * np.float32(0.5)).astype(np.float32)
    W = (np.float32(0.02) * rng.standard_normal((rows, cols), dtype=np.float32))
    wp, hp = os.path.join(folder, "W.npy"), os.path.join(folder, "H.npy")
    np.save(wp, W)
    np.save(hp, H)
    return wp, hp, tokens


def sub_env(threads, unset_openblas_override):
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = str(threads)
    if unset_openblas_override:
        for k in OPENBLAS_OVERRIDE:
            env.pop(k, None)
    return env


def run_json(cmd, env, timeout):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def run_ours(tool, wp, hp, folder, repeats, timeout):
    best = None
    runs = []
    for r in range(repeats):
        out_dir = os.path.join(folder, f"ours_{r}")
        os.makedirs(out_dir, exist_ok=True)
        cmd = [tool, "--weight", wp, "--hessian", hp, "--out-dir", out_dir,
               "--bits", str(BITS), "--group-size", str(GROUP), "--act-order"]
        busy = wait_quiet(f"ours repeat {r}")
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n"
                               f"{p.stdout[-1000:]}\n{p.stderr[-2000:]}")
        rep_path = os.path.join(out_dir, "report.json")
        if not os.path.isfile(rep_path):
            raise RuntimeError(f"{tool} wrote no {rep_path}")
        rep = json.load(open(rep_path))
        if "seconds" not in rep:
            raise RuntimeError(f"{rep_path} has no 'seconds' field: {sorted(rep)}")
        run = {"seconds": float(rep["seconds"]), "out_dir": out_dir,
               "compile_seconds": rep.get("compile_seconds"),
               "wall_seconds": wall, "loss": rep.get("loss"), "report": rep,
               "busy_before": busy}
        runs.append(run)
        if best is None or run["seconds"] < best["seconds"]:
            best = run
    best = dict(best)
    best["all_seconds"] = [r["seconds"] for r in runs]
    best["all_busy"] = [r["busy_before"] for r in runs]
    return best


def run_torch(pythons, wp, hp, threads_list, env_modes, repeats, timeout, save_q=None):
    settings = []
    for py, t, unset in itertools.product(pythons, threads_list, env_modes):
        cmd = [py, os.path.abspath(__file__), "--_worker", "torch",
               "--weight", wp, "--hessian", hp, "--threads", str(t),
               "--repeats", str(repeats)]
        if save_q and not settings:
            cmd += ["--save-q", save_q]
        busy = wait_quiet(f"torch {py} {t} {unset}")
        res = run_json(cmd, sub_env(t, unset), timeout)
        res["busy_before"] = busy
        res["threads"] = t
        res["python"] = py
        res["openblas_override"] = "unset" if unset else "as set"
        res["best"] = min(res["seconds"])
        settings.append(res)
    return settings


def run_gemm(pythons, sizes, threads_list, timeout):
    results = []
    for i, py, t in [(i, py, t) for i, py in enumerate(pythons) for t in threads_list]:
        cmd = [py, os.path.abspath(__file__), "--_worker", "gemm",
               "--threads", str(t), "--gemm-sizes", ",".join(map(str, sizes))]
        if i > 0:
            cmd.append("--no-numpy")  # the same numpy: measured once
        busy = wait_quiet(f"gemm {py} {t}")
        res = run_json(cmd, sub_env(t, True), timeout)
        for r in res["results"]:
            r["threads"] = t
            r["blas"] = res["blas"]
            r["busy_before"] = busy
            results.append(r)
    return results


def pct(x):
    return "?" if x is None else f"{x:.0%}"


def fmt_s(x):
    return f"{x:.2f}" if isinstance(x, (int, float)) else str(x)


def torch_version(py):
    try:
        p = subprocess.run([py, "-c", "import torch; print(torch.__version__)"],
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout.strip().splitlines()[-1] if p.returncode == 0 and p.stdout.strip() else None


def resolve_pythons(spec):
    if spec != "auto":
        return [x for x in spec.split(",") if x]
    pythons = [sys.executable]
    other = "/usr/bin/python3"
    # A venv's python is a link to the system one, so compare what they import.
    if os.path.exists(other):
        v_self, v_other = torch_version(sys.executable), torch_version(other)
        if v_other and v_other != v_self:
            pythons.append(other)
    return pythons


def ints(s):
    return [int(x) for x in s.split(",") if x.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=ints, default=[1024, 2048, 4096],
                    help="comma-separated n (rows = cols = n); default 1024,2048,4096")
    ap.add_argument("--tool", default=os.path.join(REPO, "build", "bin", "gptq-quantize-layer"))
    ap.add_argument("--repeats", type=int, default=0,
                    help="repeats of our tool per size (0: 3 up to 2048, 2 above)")
    ap.add_argument("--torch-repeats", type=int, default=0,
                    help="repeats per PyTorch setting (0: 3 up to 2048, 2 above)")
    ap.add_argument("--torch-threads", type=ints, default=[1, 2])
    ap.add_argument("--torch-openblas-override", choices=["both", "as-set", "unset"],
                    default="both",
                    help="run PyTorch with OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE as the "
                         "environment sets them, unset, or both (default both)")
    ap.add_argument("--torch-python", default="auto",
                    help="comma-separated Python interpreters to run PyTorch (and torch.mm) "
                         "with; 'auto' (default): this interpreter, plus /usr/bin/python3 "
                         "when that one imports another torch version")
    ap.add_argument("--skip-torch-above", type=int, default=0,
                    help="skip PyTorch for n above this (0: never skip)")
    ap.add_argument("--skip-ours", action="store_true",
                    help="measure only PyTorch and the GEMM rate")
    ap.add_argument("--skip-gemm", action="store_true")
    ap.add_argument("--gemm-sizes", type=ints, default=[2048, 4096])
    ap.add_argument("--gemm-threads", type=ints, default=[1, 2])
    ap.add_argument("--tokens-factor", type=int, default=2,
                    help="n_tokens = factor * cols (at least 2)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--workdir", help="keep the generated files here (default: a temp dir, removed)")
    ap.add_argument("--timeout", type=int, default=1800, help="per subprocess, seconds")
    ap.add_argument("--wait-quiet", type=float, default=60.0,
                    help="before each measurement wait up to this many seconds for the "
                         "cores to be less than 15%% busy with other work (0: do not wait); "
                         "the busy fraction seen is printed either way")
    ap.add_argument("--json-out", help="also write all measurements here as JSON")
    # Internal: worker subprocesses.
    ap.add_argument("--_worker", choices=["torch", "gemm"], help=argparse.SUPPRESS)
    ap.add_argument("--weight", help=argparse.SUPPRESS)
    ap.add_argument("--hessian", help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--save-q", help=argparse.SUPPRESS)
    ap.add_argument("--no-numpy", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()

    if a._worker == "torch":
        return _worker_torch(a)
    if a._worker == "gemm":
        return _worker_gemm(a)

    if a.tokens_factor < 2:
        ap.error("--tokens-factor must be at least 2 (n_tokens >= 2 * cols)")
    tool = os.path.abspath(a.tool)
    if not a.skip_ours and not (os.path.isfile(tool) and os.access(tool, os.X_OK)):
        print(f"error: the tool binary {tool} does not exist or is not executable.\n"
              f"Build it first (cmake --build build --target gptq-quantize-layer), pass "
              f"--tool PATH, or run with --skip-ours to measure only PyTorch and the "
              f"GEMM rate.", file=sys.stderr)
        return 2
    QUIET["max_wait"] = a.wait_quiet
    pythons = resolve_pythons(a.torch_python)
    env_modes = {"both": [False, True], "as-set": [False], "unset": [True]}[a.torch_openblas_override]

    folder = a.workdir or tempfile.mkdtemp(prefix="gptq-bench-")
    os.makedirs(folder, exist_ok=True)
    print(f"# GPTQ layer benchmark: {BITS}-bit, group {GROUP}, act-order, asym, "
          f"block {BLOCK}, percdamp 0.01")
    print(f"# files in {folder}; cores: {os.cpu_count()}; "
          f"environment OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')} "
          f"OPENBLAS_L2_SIZE={os.environ.get('OPENBLAS_L2_SIZE', '(unset)')}")
    if not a.skip_ours:
        print(f"# tool {tool}, modified "
              + time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(os.path.getmtime(tool))))
    print(f"# PyTorch interpreters: {', '.join(pythons)}")
    print("# load average at start (1, 5, 15 min): "
          + ", ".join(f"{x:.2f}" for x in os.getloadavg())
          + " (other work on these cores skews every figure)")
    all_res = {"sizes": [], "gemm": []}
    try:
        gemm = []
        if not a.skip_gemm:
            gemm = run_gemm(pythons, a.gemm_sizes, a.gemm_threads, a.timeout)
            all_res["gemm"] = gemm
            print("\n## GEMM rate (sgemm, OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE unset)\n")
            print("| n | library | threads | s | GFLOP/s | other load before |")
            print("|---|---|---|---|---|---|")
            for r in gemm:
                print(f"| {r['n']} | {r['lib']} | {r['threads']} | {r['seconds']:.4f} "
                      f"| {r['gflops']:.1f} | {pct(r['busy_before'])} |")
            print(f"\nBLAS seen by the first worker: {gemm[0]['blas']}")
        gemm_rate = max((r["gflops"] for r in gemm), default=None)

        for n in a.sizes:
            t0 = time.perf_counter()
            wp, hp, tokens = make_layer(n, a.tokens_factor, a.seed, folder)
            print(f"\n# n={n}: layer {n}x{n}, H from {tokens} tokens "
                  f"(made in {time.perf_counter() - t0:.1f} s); "
                  f"work model {work_flops(n, n) / 1e9:.2f} GFLOP", flush=True)
            reps = a.repeats or (3 if n <= 2048 else 2)
            treps = a.torch_repeats or (3 if n <= 2048 else 2)
            entry = {"n": n, "tokens": tokens, "work_flops": work_flops(n, n)}
            if not a.skip_ours:
                ours = run_ours(tool, wp, hp, folder, reps, a.timeout)
                entry["ours"] = ours
                print(f"  ours: best {ours['seconds']:.4f} s of "
                      f"{', '.join(f'{s:.4f}' for s in ours['all_seconds'])}; "
                      f"compile {fmt_s(ours['compile_seconds'])} s"
                      f"{' (compiled code cached)' if ours['report'].get('compiled_code_cached') else ''}"
                      f"; process wall "
                      f"{ours['wall_seconds']:.2f} s; loss {ours['loss']}; other load before "
                      f"each run {', '.join(pct(r) for r in ours['all_busy'])}", flush=True)
            if a.skip_torch_above and n > a.skip_torch_above:
                print(f"  torch: skipped (n > --skip-torch-above {a.skip_torch_above})")
            else:
                tq = os.path.join(folder, "torch_Q.npy")
                settings = run_torch(pythons, wp, hp, a.torch_threads, env_modes, treps,
                                     a.timeout, save_q=tq)
                entry["torch"] = settings
                for s in settings:
                    print(f"  torch {s['torch_version']} threads={s['threads']} openblas override "
                          f"{s['openblas_override']}: best {s['best']:.4f} s of "
                          f"{', '.join(f'{x:.4f}' for x in s['seconds'])}; loss "
                          f"{s['loss']:.6g}; other load before {pct(s['busy_before'])}; "
                          f"BLAS {s['blas']}", flush=True)
            ol = entry.get("ours", {}).get("loss")
            if isinstance(ol, (int, float)) and entry.get("torch"):
                tl = entry["torch"][0]["loss"]
                print(f"  loss: ours {ol:.6g}, torch {tl:.6g}, relative difference "
                      f"{abs(ol - tl) / abs(tl):.2e}")
            oq = (os.path.join(entry["ours"]["out_dir"], "dequantized.npy")
                  if entry.get("ours") else None)
            if oq and os.path.isfile(oq) and entry.get("torch"):
                import numpy as np
                Qo, Qt = np.load(oq), np.load(tq)
                if Qo.shape == Qt.shape:
                    ok = np.abs(Qo - Qt) <= 1e-5 * np.abs(Qt) + 1e-7
                    entry["agreement"] = float(ok.mean())
                    print(f"  dequantized: {100 * ok.mean():.3f}% of entries agree with "
                          f"PyTorch within 1e-5*|Q|+1e-7 (information, not a test: "
                          f"a flipped rounding tie propagates along its row)")
                else:
                    print(f"  dequantized.npy has shape {Qo.shape}, PyTorch {Qt.shape}")
            all_res["sizes"].append(entry)
            if not a.workdir:  # --workdir keeps the files (overwritten size by size)
                for k in ("W.npy", "H.npy", "torch_Q.npy"):
                    if os.path.exists(os.path.join(folder, k)):
                        os.remove(os.path.join(folder, k))
                for d in os.listdir(folder):
                    if d.startswith("ours_"):
                        shutil.rmtree(os.path.join(folder, d), ignore_errors=True)

        print("\n## Results\n")
        print("| size | ours s | ours GFLOP/s | torch best s (threads) | torch GFLOP/s "
              "| speedup ours/torch | ours / GEMM rate | ours compile s |")
        print("|---|---|---|---|---|---|---|---|")
        for e in all_res["sizes"]:
            n, fl = e["n"], e["work_flops"]
            ours = e.get("ours")
            tb = min(e["torch"], key=lambda s: s["best"]) if e.get("torch") else None
            cells = [f"{n}x{n}"]
            if ours:
                cells += [f"{ours['seconds']:.4f}", f"{fl / ours['seconds'] / 1e9:.1f}"]
            else:
                cells += ["not run", "-"]
            if tb:
                ov = "" if tb["openblas_override"] == "as set" else ", override unset"
                cells += [f"{tb['best']:.4f} ({tb['threads']}{ov}; torch {tb['torch_version']})",
                          f"{fl / tb['best'] / 1e9:.1f}"]
            else:
                cells += ["skipped", "-"]
            cells.append(f"{tb['best'] / ours['seconds']:.2f}x" if ours and tb else "-")
            cells.append(f"{fl / ours['seconds'] / 1e9 / gemm_rate:.1%}"
                         if ours and gemm_rate else "-")
            cells.append((fmt_s(ours["compile_seconds"])
                          + (" (cached)" if ours["report"].get("compiled_code_cached") else ""))
                         if ours else "-")
            print("| " + " | ".join(cells) + " |")
        if gemm_rate:
            print(f"\nGEMM rate (best sgemm, n in {a.gemm_sizes}, 1-2 threads): "
                  f"{gemm_rate:.1f} GFLOP/s")
        print("Load average at the end (1, 5, 15 min): "
              + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
        print("Work model: cols^3 + rows*cols^2 + rows*cols*128/2 flops "
              "(Hessian given; the same figure for both implementations).")
        log = [b for _, b in QUIET["log"] if b is not None]
        if log:
            noisy = sum(b > QUIET["threshold"] for b in log)
            print(f"Other work on the cores just before each of the {len(log)} measurements: "
                  f"median {sorted(log)[len(log) // 2]:.0%}, max {max(log):.0%}; "
                  f"{noisy} above {QUIET['threshold']:.0%}"
                  + (" -- figures from a busy machine, rerun when it is idle" if noisy else ""))
        all_res["busy_log"] = QUIET["log"]
        if a.json_out:
            with open(a.json_out, "w") as f:
                json.dump(all_res, f, indent=1, default=str)
    finally:
        if not a.workdir:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
