"""Whole-model GPTQ, ours against GPTQModel on the CPU: the same Hugging
Face folder, the same token windows, one after the other in the same run.
Not a test.

    .venv/bin/python bench/bench_gptq_tools.py --work /tmp/gptq-tools                 # SmolLM2-135M, Llama-3.2-1B cut to 4 layers
    .venv/bin/python bench/bench_gptq_tools.py --work /tmp/gptq-tools --models smollm2-135m:4 --samples 8   # quick

Each model (``PRESET[:LAYERS]``, a preset of bench/make_hf_checkpoint.py:
random bfloat16 weights with the published config.json, made once in
--work) is quantized 4-bit, group 128, act-order, asymmetric, damping 1%,
true-sequential, on ``--samples`` x ``--seqlen`` random token ids from
``--seed`` (one .npy, read by both tools), by:

- ours: ``python -m gptq_mlir import-hf``, then ``gptq-opt
  --gptq-quantize-model`` (``calibration-batch=8 layer-errors=false``, the
  compile cache off unless ``--compile-cache warm``), each a process;
- GPTQModel (bench/gptqmodel_quantize.py in ``.venv-gptqmodel``, which
  scripts/gptqmodel-venv.sh makes): load, quantize, save, one process.

Every process runs without OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE; its
wall time, CPU time and peak RSS are measured from outside (wait4, in a
small launcher process, bench_model.py's), its stderr
kept in the run's folder. The table gives each tool's phases where it says
them, the totals and their ratio, the work model of our calibration, then
each layer's loss from both.

Losses: both tools report the reference's GPTQ loss, sum over columns of
``(w - q)^2 / d^2 / 2``, which scales with the Hessian. GPTQModel's
Hessian is ``2/T sum x x^T`` over T tokens and it prints the loss divided
by T again; ours is ``2/N sum x x^T`` over N windows (the reference's) and
reports the sum. Ours is shown on GPTQModel's scale: ``loss * N / T^2``.
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_model  # noqa: E402  (run_measured: wall time and peak RSS of a process)
import make_hf_checkpoint  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODELS = "smollm2-135m,llama-3.2-1b:4"

#: Our names of a block's layers (import-hf) and GPTQModel's (transformers').
LAYER_NAMES = {"attention.wq": "self_attn.q_proj", "attention.wk": "self_attn.k_proj",
               "attention.wv": "self_attn.v_proj", "attention.wo": "self_attn.o_proj",
               "feed_forward.w1": "mlp.gate_proj", "feed_forward.w3": "mlp.up_proj",
               "feed_forward.w2": "mlp.down_proj"}


def work_model(config: Dict, samples: int, seqlen: int) -> Dict[str, float]:
    """FLOPs of sequential calibration, summed over the blocks: each linear
    layer once on the windows (with its quantized weight: the Hessians of
    later layers need it, and nothing else needs the float one), attention's
    two products on every window (the full S x S, as the model computes
    them; the causal half is the least), and each distinct Hessian as the
    lower half of 2 X^T X."""
    t = samples * seqlen
    d, inter = config["hidden_size"], config["intermediate_size"]
    head = config.get("head_dim", d // config["num_attention_heads"])
    q, kv = config["num_attention_heads"] * head, config["num_key_value_heads"] * head
    blocks = config["num_hidden_layers"]
    return {"linear": blocks * 2 * t * (d * q + 2 * d * kv + q * d + 3 * d * inter),
            "attention": blocks * 4 * samples * seqlen * seqlen * q,
            "hessians": blocks * t * (d * d + q * q + d * d + inter * inter)}


#: The best float32 GEMM rate of numpy, n = 2048, in FLOP/s (printed).
_SGEMM = """
import time, numpy as np
a = np.random.default_rng(0).standard_normal((2048, 2048), dtype=np.float32)
best = float("inf")
for _ in range(6):
    start = time.perf_counter(); a @ a; best = min(best, time.perf_counter() - start)
print(2 * 2048 ** 3 / best)
"""


def stage_profile(config: Dict, samples: int, seqlen: int, stages: List[Dict]) -> List[Dict]:
    """Our report's stages summed by kind (the same layers in every block):
    seconds and GFLOP/s of each kind's two forwards, with the FLOPs of the
    work model (the Hessian forward: the lower half of X^T X of the stage's
    input; the propagation: the stage's layers, and attention after the
    query, key and value projections)."""
    t = samples * seqlen
    d, inter = config["hidden_size"], config["intermediate_size"]
    head = config.get("head_dim", d // config["num_attention_heads"])
    q, kv = config["num_attention_heads"] * head, config["num_key_value_heads"] * head
    shapes = {"attention.wq": (d, q), "attention.wk": (d, kv), "attention.wv": (d, kv), "attention.wo": (q, d),
              "feed_forward.w1": (d, inter), "feed_forward.w3": (d, inter), "feed_forward.w2": (inter, d)}
    kinds: Dict[str, Dict] = {}
    for index, stage in enumerate(stages):
        names = [n.partition(".")[2].partition(".")[2] for n in stage["layers"]]
        kind = ", ".join(n.rpartition(".")[2] for n in names)
        k = kinds.setdefault(kind, {"kind": kind, "stages": 0, "hessian_seconds": 0.0, "propagation_seconds": 0.0,
                                    "hessian_flops": 0, "propagation_flops": 0})
        k["stages"] += 1
        k["hessian_seconds"] += stage["hessian_forward_seconds"]
        k["propagation_seconds"] += stage["propagation_forward_seconds"]
        k["hessian_flops"] += t * shapes[names[0]][0] ** 2
        if index + 1 < len(stages):  # the last stage's outputs are read by no stage
            k["propagation_flops"] += sum(2 * t * shapes[n][0] * shapes[n][1] for n in names)
            if "attention.wq" in names:
                k["propagation_flops"] += 4 * samples * seqlen * seqlen * q
    return list(kinds.values())


def sgemm_rate(env: Dict[str, str]) -> float:
    """The machine's sgemm rate as the project venv's numpy (OpenBLAS, every
    core) reaches it, in a process of its own with ``env`` (after
    --wait-quiet)."""
    bench_model.wait_quiet("sgemm rate")
    out = subprocess.run([sys.executable, "-c", _SGEMM], env=env, check=True, capture_output=True, text=True)
    return float(out.stdout)


def log(text: str) -> None:
    print(f"bench_gptq_tools: {text}", file=sys.stderr, flush=True)


def checkpoint(work: Path, model: str, layers: Optional[int]) -> Path:
    """The folder of ``model`` (``PRESET[:LAYERS]``), written once."""
    preset, _, cut = model.partition(":")
    if preset not in make_hf_checkpoint.CONFIGS:
        raise SystemExit(f"--models: {preset!r} is not one of {', '.join(sorted(make_hf_checkpoint.CONFIGS))}")
    cut = str(layers) if layers is not None else cut
    folder = work / (f"ckpt-{preset}" + (f"-{cut}" if cut else ""))
    if not (folder / "config.json").exists():
        log(f"writing {folder}")
        make_hf_checkpoint.main([preset, str(folder)] + (["--layers", cut] if cut else []))
    return folder


def run_measured(label: str, cmd: List[str], env: Dict[str, str], timeout: float, scratch: Path) -> Dict:
    """``cmd``'s wall seconds, CPU seconds and peak RSS; its stderr goes to
    ``scratch``/<label>.log. Raises SystemExit with the log's tail when it
    fails."""
    busy = bench_model.wait_quiet(label)
    # Run in the scratch folder, so that what a tool writes into its working
    # directory (GPTQModel's logs/) stays there.
    scratch = Path(os.path.abspath(scratch))
    usage_path = scratch / ".usage.json"
    usage_path.unlink(missing_ok=True)
    log_path = scratch / (label.replace(" ", "-").replace(":", "").replace("/", "-") + ".log")
    with open(log_path, "wb") as err:
        start = time.perf_counter()
        try:
            proc = subprocess.run(bench_model._launched(cmd, str(usage_path)), env=env,
                                  stdout=subprocess.DEVNULL, stderr=err, timeout=timeout, cwd=scratch)
        except subprocess.TimeoutExpired:
            raise SystemExit(f"{label}: stopped after --timeout {timeout:.0f} s (log: {log_path})")
        wall = time.perf_counter() - start
    if proc.returncode != 0:
        tail = log_path.read_text(errors="replace").strip().splitlines()[-5:]
        raise SystemExit(f"{label} failed (exit {proc.returncode}; log: {log_path}): " + " | ".join(tail))
    usage = bench_model._child_usage(str(usage_path))
    return {"wall_seconds": wall, "cpu_seconds": usage["cpu"], "peak_rss_bytes": usage["maxrss"] * 1024,
            "busy_before": busy, "log": str(log_path)}


def measured(label: str, cmd: List, env: Dict[str, str], timeout: float, scratch: Path) -> Dict:
    # Paths absolute (not resolved: a venv's python is a link), as the
    # command runs in the scratch folder.
    r = run_measured(label, [os.path.abspath(c) if isinstance(c, Path) else str(c) for c in cmd], env,
                     timeout, scratch)
    busy = r["busy_before"]
    # Other work on the machine meanwhile shows in the load average: the
    # process itself keeps it near the core count.
    r["load_average_after"] = os.getloadavg()[0]
    log(f"  {label}: {r['wall_seconds']:.1f} s ({r['cpu_seconds']:.1f} s of CPU), peak RSS {r['peak_rss_bytes'] / 2**20:.0f} MiB, load average "
        f"{r['load_average_after']:.1f} after it" + (f", cores {busy:.0%} busy before it" if busy is not None else ""))
    return r


def run_ours(args, folder: Path, out: Path, calibration: Path, env: Dict[str, str]) -> Dict:
    module, report = out / "model.mlir", out / "ours-report.json"
    env = dict(env, PYTHONPATH=str(ROOT / "python"))
    if args.compile_cache == "off":
        env["GPTQ_MLIR_CACHE_DIR"] = "off"
    imported = measured("ours: import-hf", [sys.executable, "-m", "gptq_mlir", "import-hf", folder, "-o", module],
                        env, args.timeout, out)
    options = (f"calibration={calibration} bits=4 group-size=128 act-order=true sequential=layers "
               f"calibration-batch={args.calibration_batch} layer-errors=false report={report}")
    quantized = measured("ours: gptq-opt --gptq-quantize-model",
                         [args.build_dir / "bin/gptq-opt", module, f"--gptq-quantize-model={options}",
                          "--emit-bytecode", "-o", out / "q.mlirbc"], env, args.timeout, out)
    rep = json.loads(report.read_text())
    timing = rep["timing"]
    windows, tokens = args.samples, args.samples * args.seqlen
    losses = {}
    for layer in rep["layers"]:
        block, _, name = layer["name"].partition(".")[2].partition(".")
        if "loss" in layer and name in LAYER_NAMES:
            losses[f"{block}.{LAYER_NAMES[name]}"] = layer["loss"] * windows / tokens ** 2
    return {"seconds": imported["wall_seconds"] + quantized["wall_seconds"],
            "cpu_seconds": imported["cpu_seconds"] + quantized["cpu_seconds"],
            "load_average_after": quantized["load_average_after"],
            "peak_rss_bytes": max(imported["peak_rss_bytes"], quantized["peak_rss_bytes"]),
            "phases": {"import-hf": imported["wall_seconds"],
                       "compile": timing["compile_seconds"],
                       "calibration forwards (Hessians)": timing["calibration_forward_seconds"],
                       "calibration forwards (propagation)": timing["propagation_forward_seconds"],
                       "quantize": timing["quantize_seconds"],
                       "gptq-opt outside the pass": quantized["wall_seconds"] - timing["total_seconds"]},
            "stages": rep.get("stages"),
            "stage_profile": stage_profile(json.loads((folder / "config.json").read_text()), args.samples,
                                           args.seqlen, rep.get("stages") or []),
            "losses": losses}


def run_gptqmodel(args, folder: Path, out: Path, calibration: Path, env: Dict[str, str]) -> Dict:
    python = Path(args.gptqmodel_python)
    if not python.exists():
        raise SystemExit(f"{python} does not exist: run bash scripts/gptqmodel-venv.sh")
    figures = out / "gptqmodel.json"
    saved = out / "gptqmodel-out"
    shutil.rmtree(saved, ignore_errors=True)
    env = dict(env, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    r = measured("GPTQModel", [python, ROOT / "bench/gptqmodel_quantize.py", folder, "--calibration", calibration,
                               "--out", saved, "--json", figures, "--act-order", "--dtype", args.gptqmodel_dtype],
                 env, args.timeout, out)
    fig = json.loads(figures.read_text())
    losses = {}
    for layer in fig["layers"]:
        try:
            losses[f"{layer['layer']}.{layer['module']}"] = float(layer["loss"])
        except (TypeError, ValueError):  # a fallback's text instead of a loss
            continue
    s = fig["seconds"]
    return {"seconds": r["wall_seconds"], "cpu_seconds": r["cpu_seconds"], "peak_rss_bytes": r["peak_rss_bytes"],
            "load_average_after": r["load_average_after"],
            "phases": {"start (Python, torch, gptqmodel imports)": s["import"], "load": s["load"],
                       "quantize (forwards, Hessians, GPTQ, packing)": s["quantize"], "save": s["save"]},
            "versions": {"gptqmodel": fig["gptqmodel_version"], "torch": fig["torch_version"],
                         "threads": fig["threads"], "dtype": fig.get("dtype")},
            "losses": losses}


def bench(args, model: str, env: Dict[str, str]) -> Dict:
    folder = checkpoint(args.work, model, args.layers)
    config = json.loads((folder / "config.json").read_text())
    out = args.work / folder.name.replace("ckpt-", "run-")
    out.mkdir(parents=True, exist_ok=True)
    calibration = out / f"calib-{args.samples}x{args.seqlen}-seed{args.seed}.npy"
    if not calibration.exists():
        rng = np.random.default_rng(args.seed)
        np.save(calibration, rng.integers(0, config["vocab_size"], size=(args.samples, args.seqlen)).astype(np.int32))
    log(f"{folder.name}: {config['num_hidden_layers']} layers, {args.samples} x {args.seqlen} windows")
    record = {"model": model, "folder": str(folder), "layers": config["num_hidden_layers"],
              "samples": args.samples, "seqlen": args.seqlen,
              "work_flops": work_model(config, args.samples, args.seqlen), "sgemm_flops": args.sgemm}
    if "ours" in args.tools:
        record["ours"] = run_ours(args, folder, out, calibration, env)
    if "gptqmodel" in args.tools:
        record["gptqmodel"] = run_gptqmodel(args, folder, out, calibration, env)
    return record


def minutes(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 60 else f"{int(seconds // 60)} min {seconds % 60:04.1f} s"


def print_record(r: Dict) -> None:
    ours, theirs = r.get("ours"), r.get("gptqmodel")
    print(f"\n## {r['model']}: {r['layers']} layers, {r['samples']} x {r['seqlen']} windows, "
          "4-bit g128 act-order\n")
    if theirs:
        v = theirs["versions"]
        print(f"GPTQModel {v['gptqmodel']}, torch {v['torch']}, {v['threads']} threads, the model in "
              f"{v['dtype']}.\n")
    print("| tool | phase | seconds |")
    print("| --- | --- | --- |")
    for name, side in (("ours", ours), ("GPTQModel", theirs)):
        if not side:
            continue
        for phase, seconds in side["phases"].items():
            print(f"| {name} | {phase} | {seconds:.1f} |")
        print(f"| {name} | **total** (wall; {side['cpu_seconds']:.0f} s of CPU; peak RSS "
              f"{side['peak_rss_bytes'] / 2**20:.0f} MiB; load average {side['load_average_after']:.1f} at the end) "
              f"| **{minutes(side['seconds'])}** |")
    if ours:
        work, rate = r["work_flops"], r["sgemm_flops"]
        total = sum(work.values())
        forwards = sum(v for k, v in ours["phases"].items() if k.startswith("calibration forwards"))
        print(f"\nWork model of calibration: {work['linear'] / 1e9:.0f} GFLOP of linear layers, "
              f"{work['attention'] / 1e9:.0f} of attention (full S x S), {work['hessians'] / 1e9:.0f} of Hessians "
              f"(lower halves); {total / 1e9:.0f} GFLOP at this machine's sgemm rate ({rate / 1e9:.0f} GFLOP/s, "
              f"numpy) is {total / rate:.1f} s; ours took {forwards:.1f} s ({total / forwards / 1e9:.0f} GFLOP/s, "
              f"{total / rate / forwards:.0%} of the rate).")
    if ours and ours.get("stage_profile"):
        print("\n| our stages (layers) | stages | Hessian forwards s | GFLOP/s | propagation s | GFLOP/s |")
        print("| --- | --- | --- | --- | --- | --- |")
        for k in ours["stage_profile"]:
            rate = lambda f, sec: f"{f / sec / 1e9:.0f}" if sec > 0 and f > 0 else ""  # noqa: E731
            print(f"| {k['kind']} | {k['stages']} | {k['hessian_seconds']:.2f} | "
                  f"{rate(k['hessian_flops'], k['hessian_seconds'])} | {k['propagation_seconds']:.2f} | "
                  f"{rate(k['propagation_flops'], k['propagation_seconds'])} |")
    if ours and theirs:
        print(f"\nGPTQModel / ours, wall time: **{theirs['seconds'] / ours['seconds']:.2f}x** (CPU time: "
              f"{theirs['cpu_seconds'] / ours['cpu_seconds']:.2f}x); "
              f"peak RSS ours / GPTQModel: {ours['peak_rss_bytes'] / theirs['peak_rss_bytes']:.2f}.")
        common = [k for k in ours["losses"] if k in theirs["losses"]]
        ratios = [ours["losses"][k] / theirs["losses"][k] for k in common if theirs["losses"][k] > 0]
        if ratios:
            geo = math.exp(sum(math.log(x) for x in ratios if x > 0) / len(ratios))
            print(f"Layer losses (GPTQModel's scale), {len(common)} layers: sum ours "
                  f"{sum(ours['losses'][k] for k in common):.6g}, GPTQModel "
                  f"{sum(theirs['losses'][k] for k in common):.6g}; ours / GPTQModel per layer: geometric "
                  f"mean {geo:.4f}, min {min(ratios):.4f}, max {max(ratios):.4f}; ours lower or equal on "
                  f"{sum(x <= 1 for x in ratios)} of {len(ratios)}.\n")
            print("| layer | ours | GPTQModel | ours / GPTQModel |")
            print("| --- | --- | --- | --- |")
            for k in common:
                a, b = ours["losses"][k], theirs["losses"][k]
                print(f"| {k} | {a:.6g} | {b:.6g} | {a / b:.4f} |" if b > 0 else f"| {k} | {a:.6g} | {b:.6g} | |")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="folder for checkpoints, windows and outputs")
    parser.add_argument("--models", default=DEFAULT_MODELS,
                        help=f"comma-separated PRESET[:LAYERS] (default {DEFAULT_MODELS})")
    parser.add_argument("--layers", type=int, help="cut every model to N layers (quick runs)")
    parser.add_argument("--samples", type=int, default=32, help="calibration windows (default 32)")
    parser.add_argument("--seqlen", type=int, default=512, help="tokens per window (default 512)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tools", default="ours,gptqmodel", help="ours, gptqmodel or both (default)")
    parser.add_argument("--build-dir", type=Path, default=ROOT / "build")
    parser.add_argument("--gptqmodel-python", default=str(ROOT / ".venv-gptqmodel/bin/python"))
    parser.add_argument("--gptqmodel-dtype", choices=("auto", "float32", "bfloat16"), default="auto",
                        help="GPTQModel's model dtype (default auto, its own choice)")
    parser.add_argument("--compile-cache", choices=("off", "warm"), default="off",
                        help="off (default): our compile is counted; warm: the user's cache")
    parser.add_argument("--calibration-batch", type=int, default=8,
                        help="our windows per call of a stage (default 8)")
    parser.add_argument("--wait-quiet", type=float, default=0.0,
                        help="before each process, wait up to this many seconds for the cores to be idle")
    parser.add_argument("--timeout", type=float, default=3 * 3600, help="seconds per process")
    parser.add_argument("--json", type=Path, help="write the records here")
    parser.add_argument("--tables", type=Path, metavar="JSON",
                        help="print the tables of an earlier run's --json and run nothing")
    args = parser.parse_args(argv)
    # Absolute: the tools run in their scratch folders.
    args.work = Path(os.path.abspath(args.work))
    if args.tables:
        for r in json.loads(args.tables.read_text()):
            if r.get("ours") and "stage_profile" not in r["ours"]:
                config = json.loads((Path(r["folder"]) / "config.json").read_text())
                r["ours"]["stage_profile"] = stage_profile(config, r["samples"], r["seqlen"],
                                                           r["ours"].get("stages") or [])
            print_record(r)
        return 0
    args.tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    args.work.mkdir(parents=True, exist_ok=True)
    bench_model.QUIET["max_wait"] = args.wait_quiet
    env = dict(os.environ)
    # Both sides without the OpenBLAS settings some machines set
    # (bench/README.md).
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    start = time.perf_counter()
    args.sgemm = sgemm_rate(env)
    log(f"sgemm rate (numpy, n = 2048): {args.sgemm / 1e9:.0f} GFLOP/s")
    records = [bench(args, model.strip(), env) for model in args.models.split(",") if model.strip()]
    for r in records:
        print_record(r)
    log(f"done in {minutes(time.perf_counter() - start)}")
    if args.json:
        args.json.write_text(json.dumps(records, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
