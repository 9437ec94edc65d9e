"""The forward of a mixture of experts against its number of experts and its
top-k: with the same active parameters per token (hidden size, expert size,
top-k), 8 experts and 128 should cost about the same, and top-k 8 about four
times top-k 2 in the experts. Not a test.

    .venv/bin/python bench/bench_moe_forward.py --work /tmp/moe-forward
    .venv/bin/python bench/bench_moe_forward.py --work /tmp/moe-forward --shapes 8x8,128x8 --json forward.json

The models are Qwen3-30B-A3B's shape (bench/make_hf_checkpoint.py's
``qwen3-30b-a3b``: hidden 2048, 32 heads / 4 kv heads of 128, experts of
768) cut to ``--layers`` layers (default 2) and a ``--vocab`` of 8192 (the
classifier of the real 151936 would dominate the forward), with E experts
and top-k k for each ``--shapes`` entry ``ExK``. The checkpoints of the
same E are one set of random bfloat16 weights; k changes config.json only.

Each model is imported (``import-hf``) and, with ``--weights`` ``rtn``
(the default is both), quantized to 4 bits, group 128, by
``gptq-quantize-model method=rtn`` (no calibration: the packed layout and
kernels of a GPTQ checkpoint without act-order). Then ``gptq-run --entry
forward --repeat R --time`` runs the forward on random tokens of each
``--tokens`` shape (``BxS``); the table gives the compile seconds of the
first run of each module (zero where the code was cached) and the best
call after the first (the first maps fresh memory), with its peak RSS.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_model  # noqa: E402  (run_measured, parse_gptq_run_time)
import make_hf_checkpoint  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def parse_pairs(text: str, what: str):
    """"AxB,CxD" -> [(A, B), (C, D)]."""
    try:
        pairs = [tuple(int(n) for n in item.split("x")) for item in text.split(",")]
    except ValueError:
        pairs = []
    if not pairs or any(len(p) != 2 or min(p) < 1 for p in pairs):
        raise SystemExit(f"bench_moe_forward: {what} must be comma-separated NxM pairs, got {text!r}")
    return pairs


def config_of(experts: int, top_k: int, layers: int, vocab: int) -> dict:
    config = dict(make_hf_checkpoint.CONFIGS["qwen3-30b-a3b"])
    config.update(num_experts=experts, num_experts_per_tok=top_k, num_hidden_layers=layers, vocab_size=vocab)
    return config


def model_folder(work: Path, experts: int, top_k: int, layers: int, vocab: int) -> Path:
    """A checkpoint of ``experts`` experts and top-k ``top_k``: the weights
    of ``weights-e<E>`` (written once), its own config.json."""
    weights = work / f"weights-e{experts}"
    if not (weights / "config.json").exists():
        make_hf_checkpoint.write_checkpoint(config_of(experts, 8, layers, vocab), weights)
    folder = work / f"e{experts}-k{top_k}"
    folder.mkdir(parents=True, exist_ok=True)
    for file in weights.iterdir():
        link = folder / file.name
        if file.name != "config.json" and not link.exists():
            link.symlink_to(file.resolve())
    (folder / "config.json").write_text(json.dumps(config_of(experts, top_k, layers, vocab), indent=2,
                                                   sort_keys=True))
    return folder


def run_forward(build: Path, module: Path, tokens: Path, out: Path, repeat: int, env) -> dict:
    result = bench_model.run_measured(
        [str(build / "bin/gptq-run"), str(module), "--entry", "forward", "--input", str(tokens), "--output-dir",
         str(out), "--repeat", str(repeat), "--time"], env=env, timeout=3600, what=module.name)
    times = bench_model.parse_gptq_run_time(result["stderr"])
    return {"compile_seconds": times["compile_seconds"], "cached": times.get("cached"),
            "run_seconds": times["run_seconds"], "best_seconds": bench_model.best_after_first(times["run_seconds"]),
            "peak_rss_bytes": result["peak_rss_bytes"]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="folder for checkpoints, modules and outputs")
    parser.add_argument("--shapes", default="8x8,128x8,8x2,128x2",
                        help="comma-separated EXPERTSxTOPK (default 8x8,128x8,8x2,128x2)")
    parser.add_argument("--tokens", default="1x128,4x512", help="comma-separated BATCHxSEQ (default 1x128,4x512)")
    parser.add_argument("--layers", type=int, default=2, help="layers of each model (default 2)")
    parser.add_argument("--vocab", type=int, default=8192, help="vocabulary size (default 8192)")
    parser.add_argument("--weights", default="bf16,rtn", help="comma-separated: bf16, rtn (default both)")
    parser.add_argument("--repeat", type=int, default=4, help="calls per run; the best after the first counts")
    parser.add_argument("--build-dir", type=Path, default=ROOT / "build")
    parser.add_argument("--json", type=Path, help="write the records here")
    args = parser.parse_args(argv)
    shapes = parse_pairs(args.shapes, "--shapes")
    token_shapes = parse_pairs(args.tokens, "--tokens")
    kinds = args.weights.split(",")
    if not kinds or any(kind not in ("bf16", "rtn") for kind in kinds):
        raise SystemExit(f"bench_moe_forward: --weights takes bf16 and rtn, got {args.weights!r}")
    args.work.mkdir(parents=True, exist_ok=True)
    bench_model.SCRATCH["dir"] = str(args.work)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    rng = np.random.default_rng(0)
    token_files = {}
    for batch, seq in token_shapes:
        path = args.work / f"tokens-{batch}x{seq}.npy"
        np.save(path, rng.integers(0, args.vocab, size=(batch, seq)).astype(np.int32))
        token_files[(batch, seq)] = path

    records = []
    for experts, top_k in shapes:
        folder = model_folder(args.work, experts, top_k, args.layers, args.vocab)
        module = folder / "model.mlir"
        subprocess.run([sys.executable, "-m", "gptq_mlir", "import-hf", str(folder), "-o", str(module)],
                       env=env, check=True)
        modules = {"bf16": module}
        if "rtn" in kinds:
            modules["rtn"] = folder / "rtn.mlir"
            subprocess.run([str(args.build_dir / "bin/gptq-opt"), str(module),
                            "--gptq-quantize-model=method=rtn bits=4 group-size=128", "-o", str(modules["rtn"])],
                           env=env, check=True, stderr=subprocess.DEVNULL)
        for kind in kinds:
            for batch, seq in token_shapes:
                record = {"experts": experts, "top_k": top_k, "weights": kind, "batch": batch, "seq": seq,
                          "layers": args.layers}
                record.update(run_forward(args.build_dir, modules[kind], token_files[(batch, seq)],
                                          folder / f"logits-{kind}-{batch}x{seq}", args.repeat, env))
                print(f"E={experts} k={top_k} {kind} {batch}x{seq}: compile {record['compile_seconds']:.1f} s, "
                      f"calls {', '.join(f'{s:.3f}' for s in record['run_seconds'])} s, "
                      f"peak RSS {record['peak_rss_bytes'] / 2**20:.0f} MiB", file=sys.stderr, flush=True)
                records.append(record)

    hidden = make_hf_checkpoint.CONFIGS["qwen3-30b-a3b"]["hidden_size"]
    inter = make_hf_checkpoint.CONFIGS["qwen3-30b-a3b"]["moe_intermediate_size"]
    print(f"| experts | top-k | expert parameters, all / active per token ({args.layers} layers) | weights "
          + "".join(f"| {b} x {s}: forward (rows per expert) " for b, s in token_shapes) + "| compile |")
    print("| --- | --- | --- | --- " + "| --- " * len(token_shapes) + "| --- |")
    for experts, top_k in shapes:
        for kind in kinds:
            row = [r for r in records if (r["experts"], r["top_k"], r["weights"]) == (experts, top_k, kind)]
            per_expert = 3 * hidden * inter * args.layers
            cells = "".join(f"| {r['best_seconds']:.3f} s ({r['batch'] * r['seq'] * top_k / experts:.0f}) "
                            for r in row)
            first = row[0]
            compile_text = f"{first['compile_seconds']:.1f} s" + (" (cached)" if first["cached"] else "")
            print(f"| {experts} | {top_k} | {experts * per_expert / 1e6:.0f} M / {top_k * per_expert / 1e6:.0f} M "
                  f"| {kind} {cells}| {compile_text} |")
    if args.json:
        args.json.write_text(json.dumps(records, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
