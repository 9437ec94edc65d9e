"""Benchmark: whole models on the CPU, ours against PyTorch eager, in one run.

a. Forward (``--skip-forward`` to leave it out). For each model of
   ``--models`` (default ``stories260K,110m``): ``--batch`` x ``--seqlen``
   random token ids (fixed ``--seed``) through

   - ours, float32: ``python -m gptq_mlir import-llama2c`` then
     ``gptq-run model.mlir --entry forward --input tokens.npy --output-dir D
     --time --repeat R``; the run figure is the best of the R calls after the
     first (the first maps fresh memory; R is ``--repeats``, raised for short
     calls to last about ``--min-seconds``, on both sides), compile seconds as
     gptq-run prints them, peak RSS per process;
   - ours, 4-bit group-128: ``gptq-opt model.mlir
     --gptq-quantize-model="method=rtn bits=4 group-size=128"`` then gptq-run
     as above. Round-to-nearest writes the same rewritten structure
     (packed codes, ``gptq.unpack`` + ``gptq.dequantize`` in front of each
     layer's matmul) as GPTQ, so the forward speed is GPTQ's;
   - PyTorch eager float32 (``gptq_mlir.importers.torch_model.Llama2c``, the same
     checkpoint, ``torch.no_grad()``): each setting in its own subprocess with
     ``torch.set_num_threads(T)`` and ``OMP/OPENBLAS/MKL_NUM_THREADS = T``,
     T in ``--torch-threads`` (1, 2), each with the environment's
     ``OPENBLAS_CORETYPE``/``OPENBLAS_L2_SIZE`` kept and unset (as
     ``bench_quantize.py``); best of R after the first per setting, and the
     best setting counts.

   - IREE (``--iree``, default ``auto``: when the ``iree-base-compiler``
     and ``iree-base-runtime`` packages import): both modules made upstream
     MLIR by ``gptq-opt M --gptq-to-upstream-pipeline``, compiled by
     ``iree-compile --iree-hal-target-device=local
     --iree-hal-local-target-device-backends=llvm-cpu
     --iree-llvmcpu-target-cpu=host`` (its Python API, in a subprocess) and
     run on ``local-task`` (best of R after the first; compiled in the
     first round, whose vmfb the later rounds load); and ours on the same
     upstream modules (gptq-run), which should be as fast as the gptq-op
     form. Logits against ours.

   Tokens per second = batch x seqlen / seconds. Our logits are compared with
   PyTorch's: the float32 model's with the float model's, the 4-bit model's
   with PyTorch's on the same round-to-nearest weights
   (``bench/torch_gptq_model.rtn_quantize``); the figure is
   max |ours - torch| / max |torch|.

b. End-to-end GPTQ (``--skip-gptq`` to leave it out) of ``--gptq-model``
   (default 110m): ``--gptq-samples`` x ``--gptq-seqlen`` calibration
   windows, 4 bits, group 128, act-order, sequential ``layers`` (the
   reference's true-sequential groups).

   - ours: import, ``gptq-opt model.mlir --gptq-quantize-model="calibration=
     calib.npy bits=4 group-size=128 act-order=true layer-errors=false
     report=r.json" --emit-bytecode -o q.mlirbc`` (its phases from the
     report's ``timing``), then the compile of the result (``gptq-run
     q.mlirbc --time`` on one short window);
   - PyTorch: ``bench/torch_gptq_model.quantize_model`` (the reference
     llama.py's sequential driver; layers by ``bench/torch_gptq.py``) in a
     subprocess per thread setting as above, its phases timed by wrapping
     the block forward, the Hessian accumulation, ``gptq_quantize`` and the
     Cholesky factorizations.

   Calibration windows: for stories260K, ``python -m gptq_mlir calib`` on
   its TinyStories text (tok512 tokenizer, first 80%, seed); for the 32000-
   vocabulary models, which have no tokenizer here, random token ids from the
   seed (the speed does not depend on the ids).

Models: ``stories260K`` (``data/stories260K/stories260K.bin``), ``110m``
and ``15m`` (random checkpoints of stories110M's and stories15M's shapes,
written by ``bench/make_checkpoint.py`` into ``--work-dir``), or a path to a
llama2.c ``.bin``. Compilation is measured cold: our tools run with
``GPTQ_MLIR_CACHE_DIR=off`` unless ``--compile-cache keep``.

Results: a markdown table on stdout, progress on stderr, everything with
``--json FILE``. Run from the repository root:

    .venv/bin/python bench/bench_model.py [--build-dir build] [--json results.json]
    .venv/bin/python bench/bench_model.py --models stories260K,15m --gptq-model 15m
"""

import argparse
import json
import math
import os
import platform
import resource
import shutil
import subprocess
import sys
import threading
import time
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "python"))
import bench_quantize  # noqa: E402  (the layer benchmark: thread settings, noise control)
from bench_quantize import QUIET, run_json, sub_env, wait_quiet  # noqa: E402

STORIES = os.path.join(REPO, "data", "stories260K")
PRESET_MODELS = ("110m", "15m")
PYTHONPATH = os.path.join(REPO, "python")


def log(text: str) -> None:
    print(f"bench_model: {text}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Subprocesses: wall time and peak RSS of each.

class ToolError(RuntimeError):
    pass


#: Where run_measured keeps a child's stderr (the work folder, once made).
SCRATCH = {"dir": "."}


#: Runs argv[2:] as a child of a fresh, small process and writes the
#: child's peak RSS (KiB) and CPU seconds (user + system), from wait4, to
#: the file argv[1] as JSON; exits with the child's status. Linux keeps the
#: largest resident set a process has had across fork and exec, so a tool
#: started straight from this (large) process would report this process's
#: peak whenever it was the larger.
_PEAK_RSS_LAUNCHER = """
import ctypes, json, os, signal, sys
pid = os.fork()
if pid == 0:
    try:
        # Killed with the launcher (timeouts kill the launcher).
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    json.dump({"maxrss": usage.ru_maxrss, "cpu": usage.ru_utime + usage.ru_stime}, out)
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def _peak_rss_file() -> str:
    """The file the launcher writes a child's usage to, emptied."""
    path = os.path.join(SCRATCH["dir"], ".peak-rss")
    if os.path.exists(path):
        os.remove(path)
    return path


def _launched(cmd: List[str], rss_path: str) -> List[str]:
    """``cmd`` run through _PEAK_RSS_LAUNCHER, which writes to ``rss_path``."""
    return [sys.executable, "-c", _PEAK_RSS_LAUNCHER, rss_path] + list(cmd)


def _child_usage(rss_path: str) -> Dict:
    """What the launcher wrote: ``maxrss`` (KiB) and ``cpu`` (seconds);
    zeros when the child never ran to the end."""
    if not os.path.exists(rss_path):
        return {"maxrss": 0, "cpu": 0.0}
    with open(rss_path) as handle:
        text = handle.read()
    return json.loads(text) if text else {"maxrss": 0, "cpu": 0.0}


def _peak_rss_bytes(rss_path: str) -> int:
    """The child's peak RSS in bytes (0 when it never ran to the end)."""
    return _child_usage(rss_path)["maxrss"] * 1024


def run_measured(cmd: List[str], env: Optional[Dict[str, str]] = None, timeout: float = 3600,
                 what: str = "") -> Dict:
    """Run ``cmd``; return its wall seconds, peak RSS (bytes, from wait4 in a
    small launcher process, see _PEAK_RSS_LAUNCHER) and stderr. Raises
    ToolError (with the stderr's tail) when it fails."""
    busy = wait_quiet(what or os.path.basename(cmd[0]))
    err_path = os.path.join(SCRATCH["dir"], ".stderr")
    rss_path = _peak_rss_file()
    with open(err_path, "w+b") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(_launched(cmd, rss_path), env=env,
                                stdout=subprocess.DEVNULL, stderr=err)
        timed_out = threading.Event()

        def stop() -> None:
            timed_out.set()
            proc.terminate()

        timer = threading.Timer(timeout, stop)
        timer.start()
        try:
            proc.wait()
        finally:
            timer.cancel()
        wall = time.perf_counter() - start
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    if proc.returncode != 0:
        tail = stderr.strip().splitlines()[-5:]
        raise ToolError(f"{' '.join(cmd)} failed (exit {proc.returncode}"
                        f"{', killed after --timeout' if timed_out.is_set() else ''}): "
                        + " | ".join(tail))
    return {"wall_seconds": wall, "peak_rss_bytes": _peak_rss_bytes(rss_path), "stderr": stderr,
            "busy_before": busy}


def tool_env(args) -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHONPATH + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if args.compile_cache == "off":
        env["GPTQ_MLIR_CACHE_DIR"] = "off"
    return env


def tool(args, name: str) -> str:
    path = os.path.join(args.build_dir, "bin", name)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise ToolError(f"{path} does not exist or is not executable: build it "
                        f"(bash scripts/setup.sh) or pass --build-dir")
    return path


def parse_gptq_run_time(stderr: str) -> Dict:
    """``cached``, ``compile_seconds`` and ``run_seconds`` from ``gptq-run --time``."""
    out: Dict = {}
    for line in stderr.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "cached" and len(words) == 2:
            out["cached"] = words[1] == "yes"
        elif words[0] == "compile_seconds" and len(words) == 2:
            out["compile_seconds"] = float(words[1])
        elif words[0] == "run_seconds":
            out["run_seconds"] = [float(w) for w in words[1:]]
    if "run_seconds" not in out or "compile_seconds" not in out:
        raise ToolError("gptq-run --time printed no compile_seconds/run_seconds: "
                        + " | ".join(stderr.strip().splitlines()[-3:]))
    return out


def best_after_first(seconds: List[float]) -> float:
    """The best of the calls after the first (the first alone when it is the only one)."""
    return min(seconds[1:]) if len(seconds) > 1 else seconds[0]


# --------------------------------------------------------------------------
# Models, tokens, imports.

def model_checkpoint(args, name: str) -> str:
    """The checkpoint file of a --models entry, made when it is a preset."""
    if name == "stories260K":
        return os.path.join(STORIES, "stories260K.bin")
    if name in PRESET_MODELS:
        import make_checkpoint
        path = os.path.join(args.work_dir, f"{name}.bin")
        if name not in MADE:
            log(f"writing the {name}-shape checkpoint (seed {args.checkpoint_seed}) to {path}")
            t0 = time.perf_counter()
            make_checkpoint.write_checkpoint(path, make_checkpoint.config_for(name), args.checkpoint_seed)
            MADE[name] = time.perf_counter() - t0
        return path
    if os.path.isfile(name):
        return name
    raise ToolError(f"model {name!r}: expected stories260K, {', '.join(PRESET_MODELS)} or a "
                    f"llama2.c .bin file")


def checkpoint_config(path: str):
    """The config in a checkpoint's header, checked against the file's size
    (without reading the weights)."""
    from gptq_mlir.importers import llama2c
    with open(path, "rb") as handle:
        head = handle.read(llama2c.VERSION1_HEADER_BYTES)
    return llama2c._expected_size(head, os.path.getsize(path))[0]


MADE: Dict[str, float] = {}
IMPORTS: Dict[str, Dict] = {}


def model_label(name: str) -> str:
    return os.path.splitext(os.path.basename(name))[0] if os.path.isfile(name) else name


def import_model(args, name: str, checkpoint: str) -> Dict:
    """``import-llama2c`` once per model and run; its figures."""
    if name in IMPORTS:
        return IMPORTS[name]
    folder = os.path.join(args.work_dir, model_label(name))
    os.makedirs(folder, exist_ok=True)
    mlir = os.path.join(folder, "model.mlir")
    log(f"{name}: import-llama2c {checkpoint} --external-weights")
    r = run_measured([sys.executable, "-m", "gptq_mlir", "import-llama2c", checkpoint, "-o", mlir,
                      "--external-weights"],
                     tool_env(args), args.timeout, f"import {name}")
    r.pop("stderr")
    r.update({"mlir": mlir, "mlir_bytes": os.path.getsize(mlir), "folder": folder})
    log(f"{name}: imported in {r['wall_seconds']:.1f} s, {r['mlir_bytes'] / 1e6:.1f} MB of MLIR, "
        f"peak RSS {r['peak_rss_bytes'] / 2**20:.0f} MiB")
    IMPORTS[name] = r
    return r


def save_tokens(path: str, batch: int, seqlen: int, vocab: int, seed: int) -> None:
    import numpy as np
    from gptq_mlir.files.outputs import save_npy
    rng = np.random.default_rng(seed)
    save_npy(path, rng.integers(0, vocab, size=(batch, seqlen), dtype=np.int32))


def relative_difference(ours, reference) -> float:
    """max |ours - reference| / max |reference| (inf when the shapes differ)."""
    import numpy as np
    if ours.shape != reference.shape:
        return math.inf
    scale = float(np.max(np.abs(reference)))
    return float(np.max(np.abs(ours.astype(np.float64) - reference))) / (scale or 1.0)


def calls_for(args, first_best: float) -> int:
    """Calls per measurement: --repeats, or more when calls are short, so
    that the calls after the first take about --min-seconds in all."""
    if first_best <= 0:
        return args.repeats
    return max(args.repeats, min(100, 1 + math.ceil(args.min_seconds / first_best)))


def merge_round(best: Dict, again: Dict, key: str, calls_key: str) -> Dict:
    """One measurement over rounds: every round's calls kept (``rounds``),
    the best figure of any round, the largest peak RSS; the rest (compile
    seconds, logits) from the first round."""
    best.setdefault("rounds", [best[calls_key]]).append(again[calls_key])
    best[key] = min(best[key], again[key])
    if "peak_rss_bytes" in again:
        best["peak_rss_bytes"] = max(best.get("peak_rss_bytes", 0), again["peak_rss_bytes"])
    return best


def run_ours_forward(args, name: str, mlir: str, tokens: str, out_dir: str,
                     calls: int) -> Dict:
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    cmd = [tool(args, "gptq-run"), mlir, "--entry", "forward", "--input", tokens,
           "--output-dir", out_dir, "--time", "--repeat", str(calls)]
    r = run_measured(cmd, tool_env(args), args.timeout, f"gptq-run {name}")
    timing = parse_gptq_run_time(r.pop("stderr"))
    r.update(timing)
    r["seconds"] = best_after_first(timing["run_seconds"])
    r["logits"] = os.path.join(out_dir, "0.npy")
    return r


# --------------------------------------------------------------------------
# PyTorch workers (subprocesses).

def _torch_threads(threads: int) -> None:
    import torch
    torch.set_num_threads(threads)


def _worker_forward(a) -> None:
    import numpy as np
    import torch
    import torch_gptq_model
    from gptq_mlir.importers import llama2c
    from gptq_mlir.importers.torch_model import Llama2c
    _torch_threads(a.threads)
    model = Llama2c.from_checkpoint(llama2c.read_checkpoint(a.checkpoint))
    if a.rtn_bits:
        with torch.no_grad():
            for block in model.layers:
                for short in torch_gptq_model.BLOCK_LAYERS:
                    layer = torch_gptq_model.linear(block, short)
                    layer.weight.data.copy_(torch_gptq_model.rtn_quantize(
                        layer.weight.data, a.rtn_bits, a.rtn_group_size, False))
    tokens = torch.from_numpy(np.load(a.tokens).astype(np.int64))
    times = []
    with torch.no_grad():
        for _ in range(a.repeats):
            t0 = time.perf_counter()
            logits = model(tokens)
            times.append(time.perf_counter() - t0)
    if a.save_logits:
        np.save(a.save_logits, logits.numpy())
    print(json.dumps({"seconds": times, "torch_version": torch.__version__.split("+")[0],
                      "torch_threads": torch.get_num_threads(), "blas": bench_quantize._blas_info(),
                      "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))


#: The iree-compile flags of the CPU target (docs/pipelines.md).
IREE_FLAGS = ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
              "--iree-llvmcpu-target-cpu=host"]


def iree_available() -> bool:
    try:
        import iree.compiler  # noqa: F401
        import iree.runtime  # noqa: F401
    except ImportError:
        return False
    return True


def _worker_iree(a) -> None:
    import numpy as np
    from iree import compiler as ireec
    from iree import runtime as ireert
    # Compiled once per module: later rounds load the first round's vmfb.
    compile_seconds = None
    if a.vmfb and os.path.exists(a.vmfb):
        with open(a.vmfb, "rb") as f:
            vmfb = f.read()
    else:
        t0 = time.perf_counter()
        vmfb = ireec.compile_file(a.module, extra_args=IREE_FLAGS)
        compile_seconds = time.perf_counter() - t0
        if a.vmfb:
            with open(a.vmfb, "wb") as f:
                f.write(vmfb)
    context = ireert.SystemContext(config=ireert.Config("local-task"))
    context.add_vm_module(ireert.VmModule.copy_buffer(context.instance, vmfb))
    forward = context.modules.module["forward"]
    tokens = np.load(a.tokens)
    times = []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        logits = np.asarray(forward(tokens).to_host())
        times.append(time.perf_counter() - t0)
    if a.save_logits:
        np.save(a.save_logits, logits)
    try:
        from importlib.metadata import version
        iree_version = version("iree-base-runtime")
    except Exception:  # noqa: BLE001 - a figure's label only
        iree_version = "?"
    print(json.dumps({"seconds": times, "compile_seconds": compile_seconds, "iree_version": iree_version,
                      "vmfb_bytes": len(vmfb),
                      "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))


class _Timer:
    """Sums the seconds spent in the functions it wraps, by key."""

    def __init__(self):
        self.seconds: Dict[str, float] = {}
        self.calls: Dict[str, int] = {}

    def wrap(self, key: str, fn):
        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[key] = self.seconds.get(key, 0.0) + time.perf_counter() - t0
                self.calls[key] = self.calls.get(key, 0) + 1
        return timed


def _worker_gptq(a) -> None:
    import numpy as np
    import torch
    import torch_gptq_model
    from gptq_mlir.importers import llama2c, torch_model
    _torch_threads(a.threads)
    timer = _Timer()
    # Phases, by wrapping what quantize_model calls (nothing is copied).
    torch_model.Block.forward = timer.wrap("block_forward", torch_model.Block.forward)
    torch_gptq_model.HessianAccumulator.add_batch = timer.wrap(
        "hessian_accumulate", torch_gptq_model.HessianAccumulator.add_batch)
    torch_gptq_model.gptq_quantize = timer.wrap("gptq_quantize", torch_gptq_model.gptq_quantize)
    torch_gptq_model.build_model = timer.wrap("build_model", torch_gptq_model.build_model)
    torch.linalg.cholesky = timer.wrap("factorize", torch.linalg.cholesky)
    torch.cholesky_inverse = timer.wrap("factorize", torch.cholesky_inverse)
    t0 = time.perf_counter()
    checkpoint = llama2c.read_checkpoint(a.checkpoint)
    read_seconds = time.perf_counter() - t0
    windows = np.load(a.calibration)
    config = torch_gptq_model.Config("gptq", a.bits, a.group_size, a.act_order)
    t0 = time.perf_counter()
    _, report = torch_gptq_model.quantize_model(checkpoint, windows, config, a.sequential)
    quantize_seconds = time.perf_counter() - t0
    s = timer.seconds
    losses = [v["loss"] for v in report["layers"].values() if v["loss"] is not None]
    print(json.dumps({
        "read_seconds": read_seconds,
        "build_seconds": s.get("build_model", 0.0),
        "forward_seconds": s.get("block_forward", 0.0),
        "hessian_accumulate_seconds": s.get("hessian_accumulate", 0.0),
        "gptq_quantize_seconds": s.get("gptq_quantize", 0.0),
        "factorize_seconds": s.get("factorize", 0.0),
        "quantize_model_seconds": quantize_seconds,
        "total_seconds": read_seconds + quantize_seconds,
        "calls": timer.calls,
        "layers": len(report["layers"]),
        "loss_sum": float(sum(losses)),
        "torch_version": torch.__version__.split("+")[0],
        "torch_threads": torch.get_num_threads(),
        "blas": bench_quantize._blas_info(),
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }))


def torch_settings(args):
    modes = {"both": [False, True], "as-set": [False], "unset": [True]}[args.torch_openblas_override]
    return [(t, unset) for t in args.torch_threads for unset in modes]


def run_torch_worker(args, worker: str, extra: List[str], threads: int, unset: bool, what: str,
                     timeout: Optional[float] = None) -> Dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--_worker", worker,
           "--threads", str(threads)] + extra
    busy = wait_quiet(what)
    env = sub_env(threads, unset)
    env["PYTHONPATH"] = PYTHONPATH + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    rss_path = _peak_rss_file()
    t0 = time.perf_counter()
    result = run_json(_launched(cmd, rss_path), env, timeout or args.timeout)
    result.update({"threads": threads, "openblas_override": "unset" if unset else "as set",
                   "busy_before": busy, "wall_seconds": time.perf_counter() - t0})
    # The worker's own figure would include this process's peak (see
    # _PEAK_RSS_LAUNCHER).
    if "peak_rss_bytes" in result:
        result["peak_rss_bytes"] = _peak_rss_bytes(rss_path)
    return result


def setting_text(r: Dict) -> str:
    override = ", override unset" if r["openblas_override"] == "unset" else ""
    return f"{r['threads']} thread{'s' if r['threads'] > 1 else ''}{override}"


def prepared_model(args, name: str, option: str, seqlen: int):
    """The checkpoint of ``name``, its config and its import, once ``seqlen``
    (given as ``option``) is checked against the model's seq_len."""
    checkpoint = model_checkpoint(args, name)
    cfg = checkpoint_config(checkpoint)
    if seqlen > cfg.seq_len:
        raise ToolError(f"{name}: {option} {seqlen} is longer than the model's seq_len {cfg.seq_len}")
    return checkpoint, cfg, import_model(args, name, checkpoint)


# --------------------------------------------------------------------------
# a. Forward.

def bench_forward(args, name: str) -> Dict:
    import numpy as np
    checkpoint, cfg, imported = prepared_model(args, name, "--seqlen", args.seqlen)
    folder = imported["folder"]
    tokens = os.path.join(folder, "tokens.npy")
    save_tokens(tokens, args.batch, args.seqlen, cfg.vocab_size, args.seed)
    n_tokens = args.batch * args.seqlen
    entry = {"model": name, "checkpoint": checkpoint, "checkpoint_bytes": os.path.getsize(checkpoint),
             "config": cfg.__dict__, "batch": args.batch, "seqlen": args.seqlen, "tokens": n_tokens,
             "import": imported, "forms": {}}

    log(f"{name}: ours, float32 forward, {args.batch} x {args.seqlen} tokens, {args.repeats} calls")
    f32 = run_ours_forward(args, name, imported["mlir"], tokens, os.path.join(folder, "out-f32"),
                           args.repeats)
    # Short calls vary most: every later measurement of this model (ours
    # and PyTorch's) makes enough calls for about --min-seconds, and so
    # does the float32 one, again.
    calls = calls_for(args, f32["seconds"])
    if calls > args.repeats:
        log(f"{name}: calls of {f32['seconds']:.3f} s: {calls} calls per measurement "
            f"(--min-seconds {args.min_seconds:g})")
        f32 = run_ours_forward(args, name, imported["mlir"], tokens, os.path.join(folder, "out-f32"),
                               calls)
    entry["calls"] = calls
    entry["rounds"] = args.rounds
    log(f"{name}: float32 {f32['seconds']:.3f} s (calls {', '.join(f'{s:.3f}' for s in f32['run_seconds'])}), "
        f"compile {f32['compile_seconds']:.1f} s, peak RSS {f32['peak_rss_bytes'] / 2**20:.0f} MiB")
    entry["forms"]["float32"] = f32

    q_mlir = os.path.join(folder, "rtn4-g128.mlir")
    log(f"{name}: gptq-opt --gptq-quantize-model=method=rtn bits=4 group-size=128")
    rewrite = run_measured([tool(args, "gptq-opt"), imported["mlir"],
                            "--gptq-quantize-model=method=rtn bits=4 group-size=128", "-o", q_mlir],
                           tool_env(args), args.timeout, f"gptq-opt rtn {name}")
    rewrite.pop("stderr")
    log(f"{name}: rewritten in {rewrite['wall_seconds']:.1f} s")
    q4 = run_ours_forward(args, name, q_mlir, tokens, os.path.join(folder, "out-q4"), calls)
    q4["rewrite"] = rewrite
    log(f"{name}: 4-bit g128 {q4['seconds']:.3f} s (calls {', '.join(f'{s:.3f}' for s in q4['run_seconds'])}), "
        f"compile {q4['compile_seconds']:.1f} s, peak RSS {q4['peak_rss_bytes'] / 2**20:.0f} MiB")
    entry["forms"]["4-bit g128"] = q4

    settings = []
    ref_f32 = os.path.join(folder, "torch-f32.npy")
    common = ["--checkpoint", checkpoint, "--tokens", tokens, "--repeats", str(calls)]
    for round_index in range(args.rounds):
        if round_index:
            # Later rounds: every measurement again, in the same order, so
            # that a slow spell of the machine does not fall on one side.
            log(f"{name}: round {round_index + 1} of {args.rounds}")
            for form, out in (("float32", "out-f32"), ("4-bit g128", "out-q4")):
                module = imported["mlir"] if form == "float32" else q_mlir
                again = run_ours_forward(args, name, module, tokens, os.path.join(folder, out), calls)
                log(f"{name}: {form} {again['seconds']:.3f} s "
                    f"(calls {', '.join(f'{s:.3f}' for s in again['run_seconds'])})")
                merge_round(entry["forms"][form], again, "seconds", "run_seconds")
        for i, (threads, unset) in enumerate(torch_settings(args)):
            first = round_index == 0 and i == 0
            extra = common + (["--save-logits", ref_f32] if first else [])
            r = run_torch_worker(args, "forward", extra, threads, unset, f"torch forward {name}")
            r["best"] = best_after_first(r["seconds"])
            log(f"{name}: PyTorch {r['torch_version']} {setting_text(r)}: {r['best']:.3f} s "
                f"(calls {', '.join(f'{s:.3f}' for s in r['seconds'])}); BLAS {r['blas']}")
            if round_index:
                merge_round(settings[i], r, "best", "seconds")
            else:
                settings.append(r)
    entry["torch"] = settings
    entry["torch_best"] = min(settings, key=lambda r: r["best"])

    # The 4-bit reference: PyTorch on the same round-to-nearest weights, once.
    ref_q4 = os.path.join(folder, "torch-rtn4-g128.npy")
    threads, unset = torch_settings(args)[0]
    run_torch_worker(args, "forward", ["--checkpoint", checkpoint, "--tokens", tokens, "--repeats", "1",
                                       "--save-logits", ref_q4, "--rtn-bits", "4", "--rtn-group-size", "128"],
                     threads, unset, f"torch rtn logits {name}")
    for form, ours, ref in (("float32", f32, ref_f32), ("4-bit g128", q4, ref_q4)):
        ours["max_relative_difference"] = relative_difference(np.load(ours["logits"]), np.load(ref))
        log(f"{name}: {form} logits vs PyTorch: max relative difference {ours['max_relative_difference']:.2e}")
    best = entry["torch_best"]["best"]
    for form in entry["forms"].values():
        form["tokens_per_second"] = n_tokens / form["seconds"]
        form["ratio_to_torch"] = best / form["seconds"]
    entry["torch_tokens_per_second"] = n_tokens / best
    if args.iree != "off":
        entry["iree"] = bench_iree(args, name, folder, tokens, calls,
                                   {"float32": imported["mlir"], "4-bit g128": q_mlir}, entry["forms"])
    return entry


def bench_iree(args, name: str, folder: str, tokens: str, calls: int, modules: Dict[str, str],
               ours: Dict[str, Dict]) -> Dict:
    """IREE on the upstream form of each module, and ours on that form."""
    import numpy as np
    results: Dict[str, Dict] = {}
    upstream: Dict[str, str] = {}
    for form, module in modules.items():
        path = os.path.join(folder, f"upstream-{form.replace(' ', '-')}.mlir")
        log(f"{name}: gptq-opt --gptq-to-upstream-pipeline ({form})")
        made = run_measured([tool(args, "gptq-opt"), module, "--gptq-to-upstream-pipeline", "-o", path],
                            tool_env(args), args.timeout, f"gptq-opt upstream {name}")
        made.pop("stderr")
        upstream[form] = path
        results[form] = {"upstream_module": path, "upstream_seconds": made["wall_seconds"]}
        # The first round compiles it (afresh: a vmfb of an earlier run is
        # removed), the later ones load that vmfb.
        vmfb = os.path.join(folder, f"iree-{form.replace(' ', '-')}.vmfb")
        if os.path.exists(vmfb):
            os.remove(vmfb)
    for round_index in range(args.rounds):
        for form, path in upstream.items():
            r = results[form]
            out = os.path.join(folder, f"out-upstream-{form.replace(' ', '-')}")
            mine = run_ours_forward(args, name, path, tokens, out, calls)
            log(f"{name}: ours on the upstream form, {form}: {mine['seconds']:.3f} s")
            logits = os.path.join(folder, f"iree-{form.replace(' ', '-')}.npy")
            vmfb = os.path.join(folder, f"iree-{form.replace(' ', '-')}.vmfb")
            iree = run_torch_worker(args, "iree", ["--module", path, "--tokens", tokens, "--repeats",
                                                   str(calls), "--save-logits", logits, "--vmfb", vmfb],
                                    os.cpu_count() or 1, False, f"iree forward {name}")
            iree["best"] = best_after_first(iree["seconds"])
            compiled = (f"compile {iree['compile_seconds']:.1f} s" if iree["compile_seconds"] is not None
                        else "compiled in the first round")
            log(f"{name}: IREE {iree['iree_version']}, {form}: {iree['best']:.3f} s "
                f"(calls {', '.join(f'{s:.3f}' for s in iree['seconds'])}), {compiled}")
            if round_index:
                merge_round(r["ours_upstream"], mine, "seconds", "run_seconds")
                merge_round(r["iree"], iree, "best", "seconds")
            else:
                r["ours_upstream"], r["iree"] = mine, iree
                reference = np.load(ours[form]["logits"])
                r["iree_max_relative_difference"] = relative_difference(np.load(logits), reference)
                r["upstream_max_relative_difference"] = relative_difference(np.load(mine["logits"]), reference)
    for form, r in results.items():
        r["ours_over_iree"] = r["iree"]["best"] / ours[form]["seconds"]
        r["upstream_over_gptq_ops"] = r["ours_upstream"]["seconds"] / ours[form]["seconds"]
    return results


# --------------------------------------------------------------------------
# b. End-to-end GPTQ.

def calibration_file(args, name: str, vocab: int, folder: str) -> Dict:
    path = os.path.join(folder, f"calib-{args.gptq_samples}x{args.gptq_seqlen}-seed{args.seed}.npy")
    if name == "stories260K":
        cmd = [sys.executable, "-m", "gptq_mlir", "calib", "--tokenizer", os.path.join(STORIES, "tok512.bin"),
               "--text", os.path.join(STORIES, "tinystories_val_part1.txt"), "--end-fraction", "0.8",
               "--samples", str(args.gptq_samples), "--seqlen", str(args.gptq_seqlen),
               "--seed", str(args.seed), "-o", path]
        subprocess.run(cmd, env=tool_env(args), check=True, capture_output=True)
        source = "TinyStories text (tok512), first 80%, calib"
    else:
        save_tokens(path, args.gptq_samples, args.gptq_seqlen, vocab, args.seed)
        source = f"random token ids in [0, {vocab})"
    return {"path": path, "source": f"{source}, seed {args.seed}"}


def bench_gptq(args) -> Dict:
    name = args.gptq_model
    checkpoint, cfg, imported = prepared_model(args, name, "--gptq-seqlen", args.gptq_seqlen)
    folder = imported["folder"]
    calib = calibration_file(args, name, cfg.vocab_size, folder)
    act = "true" if args.gptq_act_order == "on" else "false"
    entry = {"model": name, "checkpoint": checkpoint, "checkpoint_bytes": os.path.getsize(checkpoint),
             "config": cfg.__dict__, "samples": args.gptq_samples, "seqlen": args.gptq_seqlen,
             "bits": 4, "group_size": 128, "act_order": args.gptq_act_order == "on",
             "sequential": args.gptq_sequential, "calibration": calib["source"]}

    report = os.path.join(folder, "gptq-report.json")
    # Bytecode, as for any model of this size: printing 48 MB of packed
    # weights as hex text would cost more memory than the quantization.
    q_mlir = os.path.join(folder, "gptq4-g128.mlirbc")
    # The per-layer error figures and the round-to-nearest comparison are
    # progress information that the PyTorch procedure does not compute.
    options = (f"calibration={calib['path']} bits=4 group-size=128 act-order={act} "
               f"sequential={args.gptq_sequential} layer-errors=false report={report}")
    log(f"{name}: gptq-opt --gptq-quantize-model=\"{options}\" ({args.gptq_samples} x {args.gptq_seqlen})")
    opt = run_measured([tool(args, "gptq-opt"), imported["mlir"], f"--gptq-quantize-model={options}",
                        "--emit-bytecode", "-o", q_mlir], tool_env(args), args.timeout,
                       f"gptq-opt gptq {name}")
    opt.pop("stderr")
    with open(report) as handle:
        rep = json.load(handle)
    timing = rep.get("timing")
    if timing is None:  # a gptq-opt from before the report had "timing"
        old = rep["seconds"]
        timing = {"total_seconds": old["total"], "calibration_forward_seconds": old["calibration"],
                  "propagation_forward_seconds": 0.0, "quantize_seconds": old["quantize"],
                  "quantize_layer_seconds": sum(layer["seconds"] for layer in rep["layers"]),
                  "rewrite_seconds": None, "compile_seconds": old["compile"], "from_old_report": True}
    loss_sum = sum(layer["loss"] for layer in rep["layers"] if "loss" in layer)
    log(f"{name}: gptq-opt {opt['wall_seconds']:.1f} s (pass {timing['total_seconds']:.1f} s), "
        f"peak RSS {opt['peak_rss_bytes'] / 2**20:.0f} MiB")

    short = os.path.join(folder, "tokens-1x16.npy")
    save_tokens(short, 1, min(16, cfg.seq_len), cfg.vocab_size, args.seed)
    out = os.path.join(folder, "out-gptq")
    if os.path.isdir(out):
        shutil.rmtree(out)
    compiled = run_measured([tool(args, "gptq-run"), q_mlir, "--entry", "forward", "--input", short,
                             "--output-dir", out, "--time"], tool_env(args), args.timeout,
                            f"gptq-run compile {name}")
    compiled.update(parse_gptq_run_time(compiled.pop("stderr")))
    log(f"{name}: the quantized model compiles in {compiled['compile_seconds']:.1f} s")
    ours = {"import": imported, "gptq_opt": opt, "timing": timing, "report": report,
            "compile_result": compiled, "loss_sum": loss_sum,
            "total_seconds": imported["wall_seconds"] + opt["wall_seconds"] + compiled["wall_seconds"],
            "peak_rss_bytes": max(imported["peak_rss_bytes"], opt["peak_rss_bytes"],
                                  compiled["peak_rss_bytes"])}
    entry["ours"] = ours

    settings = []
    extra = ["--checkpoint", checkpoint, "--calibration", calib["path"], "--sequential", args.gptq_sequential,
             "--bits", "4", "--group-size", "128"] + (["--act-order"] if act == "true" else [])
    stopped = []
    for threads, unset in torch_settings(args):
        log(f"{name}: PyTorch GPTQ, {threads} thread(s), OpenBLAS override {'unset' if unset else 'as set'}")
        # A setting that takes twice as long as the best so far cannot be the
        # best: it is stopped (oversubscribed threads can be 10x slower).
        limit = None
        if settings:
            limit = 2 * min(r["wall_seconds"] for r in settings) + 30
        try:
            r = run_torch_worker(args, "gptq", extra, threads, unset, f"torch gptq {name}", limit)
        except subprocess.TimeoutExpired:
            override = "unset" if unset else "as set"
            log(f"{name}: PyTorch {threads} thread(s), override {override}: stopped after {limit:.0f} s, "
                f"twice the best setting's time")
            stopped.append({"threads": threads, "openblas_override": override, "stopped_after_seconds": limit})
            continue
        log(f"{name}: PyTorch {r['torch_version']} {setting_text(r)}: {r['total_seconds']:.1f} s "
            f"(forwards {r['forward_seconds']:.1f}, GPTQ {r['gptq_quantize_seconds']:.1f}), "
            f"peak RSS {r['peak_rss_bytes'] / 2**20:.0f} MiB")
        settings.append(r)
    entry["torch"] = settings
    entry["torch_stopped"] = stopped
    entry["torch_best"] = min(settings, key=lambda r: r["total_seconds"])
    entry["speedup"] = entry["torch_best"]["total_seconds"] / ours["total_seconds"]
    return entry


# --------------------------------------------------------------------------
# Tables.

def mib(n: Optional[float]) -> str:
    return "" if n is None else f"{n / 2**20:.0f} MiB"


def sec(x: Optional[float], digits: int = 2) -> str:
    return "" if x is None else f"{x:.{digits}f}"


def print_forward(entries: List[Dict]) -> None:
    print("\n## Forward\n")
    print("| model | tokens | form | ours s | ours tok/s | PyTorch s (best setting) | PyTorch tok/s "
          "| ours / PyTorch tok/s | import s | rewrite s | compile s | peak RSS | logits vs PyTorch |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for e in entries:
        tb = e["torch_best"]
        for form, r in e["forms"].items():
            rewrite = r.get("rewrite", {}).get("wall_seconds")
            print(f"| {e['model']} | {e['batch']} x {e['seqlen']} | {form} | {r['seconds']:.3f} "
                  f"| {r['tokens_per_second']:.0f} | {tb['best']:.3f} ({setting_text(tb)}; torch {tb['torch_version']}) "
                  f"| {e['torch_tokens_per_second']:.0f} | {r['ratio_to_torch']:.2f}x "
                  f"| {e['import']['wall_seconds']:.1f} | {sec(rewrite, 1)} | {r['compile_seconds']:.1f} "
                  f"| {mib(r['peak_rss_bytes'])} | {r['max_relative_difference']:.1e} |")
    calls = ", ".join(f"{e['model']} {e['calls']}" for e in entries)
    rounds = entries[0].get("rounds", 1) if entries else 1
    print(f"\nours s: best of the gptq-run calls after the first; PyTorch: best setting, best of its calls after "
          f"the first (calls per measurement: {calls}; best of {rounds} round(s) of every measurement). 4-bit g128: written by method=rtn, the same rewritten structure as GPTQ. "
          "Logits: max |ours - torch| / max |torch|, the 4-bit model against PyTorch on the same "
          "round-to-nearest weights. Peak RSS: the gptq-run process.")


def print_iree(entries: List[Dict]) -> None:
    rows = [(e, form, r) for e in entries for form, r in (e.get("iree") or {}).items()]
    if not rows:
        return
    print("\n## Forward: IREE on the upstream form\n")
    print("| model | form | ours s | ours, upstream form s | IREE s | ours / IREE tok/s | IREE compile s "
          "| IREE peak RSS | IREE logits vs ours | upstream form's logits vs ours |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for e, form, r in rows:
        print(f"| {e['model']} | {form} | {e['forms'][form]['seconds']:.3f} | {r['ours_upstream']['seconds']:.3f} "
              f"| {r['iree']['best']:.3f} | {r['ours_over_iree']:.2f}x | {r['iree']['compile_seconds']:.1f} "
              f"| {mib(r['iree']['peak_rss_bytes'])} | {r['iree_max_relative_difference']:.1e} "
              f"| {r['upstream_max_relative_difference']:.1e} |")
    version = rows[0][2]["iree"]["iree_version"]
    print(f"\nIREE {version}: gptq-opt --gptq-to-upstream-pipeline, then iree-compile {' '.join(IREE_FLAGS)}, run "
          "on local-task; best of its calls after the first. ours, upstream form: gptq-run on the same "
          "upstream module. Logits: max |x - ours| / max |ours|, ours the gptq-op form.")


def print_gptq(e: Dict) -> None:
    o, t, tm = e["ours"], e["torch_best"], e["ours"]["timing"]
    print(f"\n## End-to-end GPTQ: {e['model']}, {e['samples']} x {e['seqlen']} tokens, 4 bits, group 128, "
          f"act-order {'on' if e['act_order'] else 'off'}, sequential {e['sequential']}\n")
    stopped = "".join(f"; {setting_text(r)} stopped after {r['stopped_after_seconds']:.0f} s"
                      for r in e.get("torch_stopped", []))
    print(f"Calibration: {e['calibration']}. PyTorch: torch {t['torch_version']}, best setting {setting_text(t)}"
          f"{stopped}.\n")
    other = tm["quantize_seconds"] - tm["quantize_layer_seconds"]
    outside = o["gptq_opt"]["wall_seconds"] - tm["total_seconds"]
    t_loop = t["gptq_quantize_seconds"] - t["factorize_seconds"]
    t_other = t["total_seconds"] - t["read_seconds"] - t["build_seconds"] - t["forward_seconds"] - t["gptq_quantize_seconds"]
    rows = [
        ("import (ours: import-llama2c; PyTorch: read the checkpoint, build the model)",
         o["import"]["wall_seconds"], t["read_seconds"] + t["build_seconds"]),
        ("calibration forwards, Hessian accumulation included (ours: Hessian stages)",
         tm["calibration_forward_seconds"], t["forward_seconds"] - 0.0),
        ("  of which Hessian accumulation", None, t["hessian_accumulate_seconds"]),
        ("calibration forwards propagating quantized outputs (ours; PyTorch: in the row above)",
         tm["propagation_forward_seconds"], None),
        ("factorizations", None, t["factorize_seconds"]),
        ("quantize loops", None, t_loop),
        ("factorizations + quantize loops (ours: one compiled call per layer)",
         tm["quantize_layer_seconds"], t["gptq_quantize_seconds"]),
        ("other per-layer work (ours: the round-to-nearest comparison, errors)", other, None),
        ("rewrite", tm["rewrite_seconds"], None),
        ("compile (ours: calibration stages and quantizers)", tm["compile_seconds"], None),
        ("compile of the quantized model (ours: gptq-run)", o["compile_result"]["compile_seconds"], None),
        ("gptq-opt outside the pass (parse, verify, print)", outside, None),
        ("other (PyTorch: embedding, copies)", None, t_other),
        ("**total** (ours: three processes' wall time)", o["total_seconds"], t["total_seconds"]),
    ]
    print("| phase | ours s | PyTorch s |")
    print("| --- | --- | --- |")
    for label, ours, torch_s in rows:
        print(f"| {label} | {sec(ours, 1)} | {sec(torch_s, 1)} |")
    print(f"| peak RSS | {mib(o['peak_rss_bytes'])} | {mib(t['peak_rss_bytes'])} |")
    print(f"\nSpeedup ours/PyTorch end to end: {e['speedup']:.2f}x. Float checkpoint "
          f"{e['checkpoint_bytes'] / 2**20:.0f} MiB; our peak RSS {o['peak_rss_bytes'] / e['checkpoint_bytes']:.1f}x it "
          f"(gptq-opt {mib(o['gptq_opt']['peak_rss_bytes'])}). Sum of the layers' GPTQ losses "
          f"(information: the same problem solved): ours {o['loss_sum']:.6g}, PyTorch {t['loss_sum']:.6g}.")
    if tm.get("from_old_report"):
        print("(This gptq-opt's report has no \"timing\": its calibration seconds cover both kinds of forward.)")


# --------------------------------------------------------------------------

def _list(text: str) -> List[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _ints(text: str) -> List[int]:
    return [int(part) for part in _list(text)]


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(REPO, "build"),
                    help="where bin/gptq-run and bin/gptq-opt are (default: build)")
    ap.add_argument("--work-dir", default=os.path.join(REPO, "build", "bench-model"),
                    help="scratch folder, kept (default: build/bench-model)")
    ap.add_argument("--models", type=_list, default=["stories260K", "110m"],
                    help="forward: comma-separated stories260K, 110m, 15m or .bin paths "
                         "(default stories260K,110m)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seqlen", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=6,
                    help="calls per measurement; the best after the first counts (default 6: "
                         "both sides are still warming up at the third call)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="forward: measure every form and setting this many times, in turn; the best "
                         "round counts (default 1)")
    ap.add_argument("--min-seconds", type=float, default=3.0,
                    help="forward: when the calls are short, make enough of them (up to 100) that "
                         "those after the first take about this long, on both sides (default 3)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the token ids and calibration windows")
    ap.add_argument("--checkpoint-seed", type=int, default=0, help="seed of the random checkpoints")
    ap.add_argument("--gptq-model", default="110m", help="110m, 15m, stories260K or a .bin (default 110m)")
    ap.add_argument("--gptq-samples", type=int, default=128)
    ap.add_argument("--gptq-seqlen", type=int, default=256)
    ap.add_argument("--gptq-act-order", choices=("on", "off"), default="on")
    ap.add_argument("--gptq-sequential", choices=("layers", "blocks", "none"), default="layers")
    ap.add_argument("--skip-forward", action="store_true")
    ap.add_argument("--skip-gptq", action="store_true")
    ap.add_argument("--torch-threads", type=_ints, default=[1, 2])
    ap.add_argument("--torch-openblas-override", choices=("both", "as-set", "unset"), default="both",
                    help="PyTorch with OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE as set, unset, or both (default)")
    ap.add_argument("--compile-cache", choices=("off", "keep"), default="off",
                    help="off (default): our tools compile afresh (GPTQ_MLIR_CACHE_DIR=off); "
                         "keep: the environment's compile cache")
    ap.add_argument("--wait-quiet", type=float, default=30.0,
                    help="before each measurement wait up to this many seconds for other work on "
                         "the cores to fall under 15%% (0: do not wait)")
    ap.add_argument("--timeout", type=float, default=7200, help="per subprocess, seconds")
    ap.add_argument("--iree", choices=("auto", "on", "off"), default="auto",
                    help="IREE on the upstream form of each model: auto (default) when its packages import")
    ap.add_argument("--json", help="write every figure here")
    # Internal: worker subprocesses.
    ap.add_argument("--_worker", choices=("forward", "gptq", "iree"), help=argparse.SUPPRESS)
    ap.add_argument("--module", help=argparse.SUPPRESS)
    ap.add_argument("--vmfb", help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--checkpoint", help=argparse.SUPPRESS)
    ap.add_argument("--tokens", help=argparse.SUPPRESS)
    ap.add_argument("--save-logits", help=argparse.SUPPRESS)
    ap.add_argument("--rtn-bits", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--rtn-group-size", type=int, default=-1, help=argparse.SUPPRESS)
    ap.add_argument("--calibration", help=argparse.SUPPRESS)
    ap.add_argument("--sequential", default="layers", help=argparse.SUPPRESS)
    ap.add_argument("--bits", type=int, default=4, help=argparse.SUPPRESS)
    ap.add_argument("--group-size", type=int, default=128, help=argparse.SUPPRESS)
    ap.add_argument("--act-order", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args._worker == "forward":
        return _worker_forward(args) or 0
    if args._worker == "gptq":
        return _worker_gptq(args) or 0
    if args._worker == "iree":
        return _worker_iree(args) or 0

    for option in ("batch", "seqlen", "repeats", "rounds", "gptq_samples", "gptq_seqlen"):
        if getattr(args, option) < 1:
            ap.error(f"--{option.replace('_', '-')} must be at least 1")
    if not args.min_seconds >= 0:
        ap.error("--min-seconds must be at least 0")
    if args.iree == "auto":
        args.iree = "on" if iree_available() else "off"
        if args.iree == "off":
            log("IREE is not installed (iree-base-compiler, iree-base-runtime): no IREE figures")
    elif args.iree == "on" and not iree_available():
        ap.error("--iree on: the iree-base-compiler and iree-base-runtime packages do not import")
    args.build_dir = os.path.abspath(args.build_dir)
    args.work_dir = os.path.abspath(args.work_dir)
    QUIET["max_wait"] = args.wait_quiet
    try:
        os.makedirs(args.work_dir, exist_ok=True)
        SCRATCH["dir"] = args.work_dir
        return run(args)
    except (ToolError, OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        print(f"bench_model: error: {error}", file=sys.stderr)
        return 1
    except RuntimeError as error:  # a worker failed (bench_quantize.run_json)
        print(f"bench_model: error: {str(error).splitlines()[0]} "
              f"{' | '.join(str(error).strip().splitlines()[-3:])}", file=sys.stderr)
        return 1


def run(args) -> int:
    from gptq_mlir.errors import GPTQError
    # Everything the run needs, checked before any work.
    tool(args, "gptq-run")
    tool(args, "gptq-opt")
    for name in ([] if args.skip_forward else args.models) + ([] if args.skip_gptq else [args.gptq_model]):
        if name not in ("stories260K",) + PRESET_MODELS and not os.path.isfile(name):
            raise ToolError(f"model {name!r}: expected stories260K, {', '.join(PRESET_MODELS)} or a "
                            f"llama2.c .bin file")
    started = time.time()
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(started)),
            "command": " ".join([os.path.relpath(__file__, os.getcwd())] + sys.argv[1:]),
            "build_dir": args.build_dir, "host": platform.node(), "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
            "environment": {k: os.environ.get(k) for k in bench_quantize.OPENBLAS_OVERRIDE},
            "compile_cache": args.compile_cache, "load_average_start": os.getloadavg()}
    try:
        commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        # A tree with changes to tracked files is not that commit.
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        meta["commit"] = (commit + ("+dirty" if dirty else "")) if commit else None
    except OSError:
        meta["commit"] = None
    results: Dict = {"meta": meta, "forward": [], "gptq": None}
    print(f"# Model benchmark, {meta['date']}, commit {meta['commit']}, build {args.build_dir}, "
          f"{meta['cpus']} cores; OPENBLAS_CORETYPE={meta['environment']['OPENBLAS_CORETYPE']}, "
          f"compile cache {args.compile_cache}")
    try:
        if not args.skip_forward:
            for name in args.models:
                results["forward"].append(bench_forward(args, name))
            print_forward(results["forward"])
            print_iree(results["forward"])
        if not args.skip_gptq:
            results["gptq"] = bench_gptq(args)
            print_gptq(results["gptq"])
    except GPTQError as error:
        raise ToolError(str(error)) from None
    busy = [b for _, b in QUIET["log"] if b is not None]
    if busy:
        noisy = sum(b > QUIET["threshold"] for b in busy)
        print(f"\nOther work on the cores before the {len(busy)} measurements: median "
              f"{sorted(busy)[len(busy) // 2]:.0%}, max {max(busy):.0%}"
              + (f"; {noisy} above {QUIET['threshold']:.0%}: rerun on an idle machine" if noisy else "."))
    meta["busy_log"] = QUIET["log"]
    meta["seconds"] = time.time() - started
    meta["made_checkpoints_seconds"] = MADE
    if args.json:
        from gptq_mlir.files.outputs import atomic_output
        with atomic_output(args.json) as handle:
            handle.write(json.dumps(results, indent=1, default=str).encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
