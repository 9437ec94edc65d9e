"""Models of real size on this machine: time and peak memory of each phase,
end to end, for random-weight Hugging Face checkpoints with the real
config.json of Llama-3.2-1B, Llama-3.1-8B, Mixtral-8x7B and Qwen3-30B-A3B
(bench/make_hf_checkpoint.py writes them, bfloat16; they are not
committed). Not a test.

    .venv/bin/python bench/bench_scale.py --work /tmp/scale                       # 1B cut to 4 and 16 layers
    .venv/bin/python bench/bench_scale.py --work /tmp/scale --models 1b-4,8b --json scale.json
    .venv/bin/python bench/bench_scale.py --work /tmp/scale --models mixtral-2 --json mixtral.json

Phases, each its own process, with its wall time and peak RSS (from wait4,
as bench_model.py measures them):

1. ``import-hf``: the module names the checkpoint's safetensors and reads
   them in place (nothing is converted or copied);
2. ``gptq-opt --gptq-quantize-model``: GPTQ 4-bit, group 128, act-order,
   true-sequential, 32 windows of 512 random tokens, ``layer-errors=false``;
   the quantized weights go to ``q.safetensors`` beside the module;
3. ``export-gptq``: the GPTQ checkpoint, streamed (float tensors copied
   a run of rows at a time, the packed tensors written as they are read);
4. ``gptq-run``: a forward of 1 x 128 tokens of the quantized module;
5. ``import-gptq``: the checkpoint read back (its float weights in place,
   the quantized tensors into an archive beside the module), and the same
   forward of that module; its logits differ from 4.'s only by the
   float16 rounding of the scales (the largest difference is printed,
   relative to the largest logit).

6. the reference procedure in PyTorch on the same checkpoint and
   calibration windows (``bench/torch_gptq_hf.py``: transformers' Llama in
   float32, the same GPTQ options), for the 1B shapes (the 8B does not fit
   in memory as float32); the ratio is its total (load, calibration,
   quantization) over ours (import-hf and quantize). Llama only: it is
   skipped for the mixtures of experts.

``--models`` takes ``1b-N`` (Llama-3.2-1B's shape cut to N layers; 16 is
the whole model), ``8b``, ``mixtral-N`` (Mixtral-8x7B cut to N layers: 8
experts of 14336, 2 per token) and ``qwen3moe-N`` (Qwen3-30B-A3B cut to N
layers: 128 experts of 768, 8 per token). Memory must not grow with depth:
the table gives the peak RSS of 1B-4 beside 1B-16.

For the mixtures a second table gives what issue 55 asks of them: the
memory bound that the pass prints before calibrating beside the peak RSS
it reached, the largest peak RSS of any phase over the bytes of bfloat16
of the cut checkpoint (at most 1.5), and the tokens that reached each
expert (from the report's ``tokens`` of each expert's ``w1``: min, median
and max over the experts of all layers, against the even share
windows x length x top-k / experts) with the layers rounded to nearest for
want of tokens. bench/bench_moe_forward.py times the forward of a mixture
against its number of experts and its top-k.
"""

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_model  # noqa: E402  (run_measured, the peak-RSS launcher)

ROOT = Path(__file__).resolve().parents[1]
#: --models prefix -> make_hf_checkpoint.py's preset.
PRESETS = {"1b": "llama-3.2-1b", "8b": "llama-3.1-8b", "mixtral": "mixtral-8x7b", "qwen3moe": "qwen3-30b-a3b"}
#: The prefixes that name mixtures of experts.
MOE = ("mixtral", "qwen3moe")
#: An expert's first layer in the report (its token count is its w3's and w2's).
EXPERT_W1 = re.compile(r"layers\.(\d+)\.feed_forward\.experts\.(\d+)\.w1")
#: The pass's line before calibration: "memory bound N MiB, in stage ...".
MEMORY_BOUND = re.compile(r"memory bound (\d+) MiB")
QUANTIZE = "bits=4 group-size=128 act-order=true sequential=layers calibration-batch=8 layer-errors=false"


def checkpoint(work: Path, model: str) -> Path:
    """The checkpoint of ``model`` (made once, with a fixed seed)."""
    name, _, layers = model.partition("-")
    preset = PRESETS[name]
    folder = work / f"ckpt-{model}"
    if not (folder / "config.json").exists():
        cmd = [sys.executable, str(ROOT / "bench/make_hf_checkpoint.py"), preset, str(folder)]
        if layers:
            cmd += ["--layers", layers]
        subprocess.run(cmd, check=True)
    return folder


def phase(label: str, cmd, env) -> dict:
    result = bench_model.run_measured([str(c) for c in cmd], env=env, timeout=6 * 3600, what=label)
    print(f"  {label}: {result['wall_seconds']:.1f} s, peak RSS {result['peak_rss_bytes'] / 2**20:.0f} MiB",
          file=sys.stderr, flush=True)
    record = {"seconds": result["wall_seconds"], "peak_rss_bytes": result["peak_rss_bytes"],
              "stderr_tail": result["stderr"].strip().splitlines()[-3:]}
    bound = [line for line in result["stderr"].splitlines() if MEMORY_BOUND.search(line)]
    if bound:
        record["memory_bound_line"] = bound[0]
        record["memory_bound_mib"] = int(MEMORY_BOUND.search(bound[0]).group(1))
    return record


def name_of(model: str) -> str:
    return model.partition("-")[0]


def expert_tokens(report: dict, config: dict, windows: int, length: int) -> dict:
    """The tokens that reached each expert (its w1's ``tokens``; 0 where the
    report has none) over all layers, and the layers rounded to nearest."""
    counts = [layer.get("tokens", 0) for layer in report["layers"] if EXPERT_W1.fullmatch(layer["name"])]
    experts = config.get("num_local_experts") or config["num_experts"]
    fallbacks = report["rounded_to_nearest"]
    return {"experts": len(counts), "min": int(min(counts)), "median": float(np.median(counts)),
            "max": int(max(counts)), "even_share": windows * length * config["num_experts_per_tok"] / experts,
            "rounded_to_nearest": len(fallbacks),
            "experts_rounded_to_nearest": sum(1 for name in fallbacks if ".experts." in name)}


#: The records' phases, in order.
PHASES = ("import", "quantize", "export", "forward", "import_gptq", "forward_imported")


def bench(work: Path, model: str, build: Path, env, torch_threads: int) -> dict:
    folder = checkpoint(work, model)
    out = work / model
    out.mkdir(parents=True, exist_ok=True)
    config = json.loads((folder / "config.json").read_text())
    bytes_on_disk = sum(p.stat().st_size for p in folder.glob("*.safetensors"))
    print(f"{model}: {config['num_hidden_layers']} layers, {bytes_on_disk / 1e9:.2f} GB of bfloat16",
          file=sys.stderr, flush=True)
    rng = np.random.default_rng(0)
    calibration = out / "calib.npy"
    windows, length = 32, 512
    np.save(calibration, rng.integers(0, config["vocab_size"], size=(windows, length)).astype(np.int32))
    tokens = out / "tokens.npy"
    np.save(tokens, rng.integers(0, config["vocab_size"], size=(1, 128)).astype(np.int32))
    python = [sys.executable, "-m", "gptq_mlir"]
    module, quantized = out / "model.mlir", out / "q.mlir"
    record = {"model": model, "layers": config["num_hidden_layers"], "checkpoint_bytes": bytes_on_disk}
    record["import"] = phase("import-hf", python + ["import-hf", folder, "-o", module], env)
    record["module_bytes"] = module.stat().st_size
    record["quantize"] = phase(
        "gptq-opt --gptq-quantize-model",
        [build / "bin/gptq-opt", module,
         f"--gptq-quantize-model=calibration={calibration} {QUANTIZE} report={out / 'report.json'}",
         "-o", quantized], env)
    if "memory_bound_mib" in record["quantize"]:
        print(f"  memory bound printed before calibration {record['quantize']['memory_bound_mib']} MiB, "
              f"peak RSS {record['quantize']['peak_rss_bytes'] / 2**20:.0f} MiB", file=sys.stderr, flush=True)
    record["quantized_bytes"] = quantized.stat().st_size + quantized.with_suffix(".safetensors").stat().st_size
    record["export"] = phase("export-gptq", python + ["export-gptq", quantized, "--out", out / "gptq"], env)
    record["forward"] = phase(
        "gptq-run 1 x 128", [build / "bin/gptq-run", quantized, "--entry", "forward", "--input", tokens,
                             "--output-dir", out / "logits"], env)
    imported = out / "imported.mlir"
    record["import_gptq"] = phase("import-gptq", python + ["import-gptq", out / "gptq", "-o", imported], env)
    record["forward_imported"] = phase(
        "gptq-run 1 x 128 (imported)", [build / "bin/gptq-run", imported, "--entry", "forward", "--input",
                                        tokens, "--output-dir", out / "logits-imported"], env)
    ours, theirs = (np.load(out / d / "0.npy") for d in ("logits", "logits-imported"))
    record["imported_logits_difference"] = float(np.abs(ours - theirs).max() / np.abs(ours).max())
    print(f"  imported logits: largest difference {record['imported_logits_difference']:.2e} of the largest logit",
          file=sys.stderr, flush=True)
    if name_of(model) == "1b" and torch_threads:
        figures = out / "torch.json"
        record["torch"] = phase(
            "torch_gptq_hf.py", [sys.executable, ROOT / "bench/torch_gptq_hf.py", folder, "--calibration",
                                 calibration, "--bits", "4", "--group-size", "128", "--act-order", "on",
                                 "--threads", str(torch_threads), "--json", figures], env)
        record["torch"].update(json.loads(figures.read_text()))
        ours = record["import"]["seconds"] + record["quantize"]["seconds"]
        record["torch_ratio"] = record["torch"]["seconds"] / ours
        print(f"  PyTorch / ours (import + quantize): {record['torch_ratio']:.2f}x", file=sys.stderr, flush=True)
    report = json.loads((out / "report.json").read_text())
    record["quantize_report"] = {key: report[key] for key in ("seconds", "timing", "peak_rss_bytes", "memory")}
    if name_of(model) in MOE:
        record["expert_tokens"] = expert_tokens(report, config, windows, length)
        peaks = {key: record[key]["peak_rss_bytes"] for key in PHASES}
        record["largest_peak_phase"] = max(peaks, key=peaks.get)
        record["peak_over_checkpoint"] = peaks[record["largest_peak_phase"]] / bytes_on_disk
        t = record["expert_tokens"]
        print(f"  tokens per expert: min {t['min']}, median {t['median']:.0f}, max {t['max']} over {t['experts']} "
              f"(even share {t['even_share']:.0f}); {t['rounded_to_nearest']} layer(s) rounded to nearest; "
              f"largest peak RSS ({record['largest_peak_phase']}) {record['peak_over_checkpoint']:.2f}x the "
              "checkpoint", file=sys.stderr, flush=True)
    return record


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="folder for checkpoints and outputs")
    parser.add_argument("--models", default="1b-4,1b-16",
                        help="comma-separated: 1b-N, 8b, mixtral-N, qwen3moe-N (default 1b-4,1b-16)")
    parser.add_argument("--build-dir", type=Path, default=ROOT / "build")
    parser.add_argument("--json", type=Path, help="write the records here")
    parser.add_argument("--torch-threads", type=int, default=os.cpu_count(),
                        help="threads of the PyTorch reference on the 1B shapes (default: every core; 0 skips it)")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    bench_model.SCRATCH["dir"] = str(args.work)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    # Benchmarks run without the OpenBLAS settings some machines set (see
    # bench/README.md).
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    records = [bench(args.work, model, args.build_dir, env, args.torch_threads)
               for model in args.models.split(",")]
    print("| model | layers | checkpoint | import | quantize | peak RSS quantize | export (peak RSS) "
          "| forward 1x128 | peak RSS forward | import-gptq (peak RSS) | imported logits | PyTorch (peak RSS) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in records:
        print(f"| {r['model']} | {r['layers']} | {r['checkpoint_bytes'] / 1e9:.2f} GB "
              f"| {r['import']['seconds']:.1f} s | {r['quantize']['seconds']:.0f} s "
              f"| {r['quantize']['peak_rss_bytes'] / 2**20:.0f} MiB "
              f"| {r['export']['seconds']:.0f} s ({r['export']['peak_rss_bytes'] / 2**20:.0f} MiB) "
              f"| {r['forward']['seconds']:.1f} s | {r['forward']['peak_rss_bytes'] / 2**20:.0f} MiB "
              f"| {r['import_gptq']['seconds']:.0f} s ({r['import_gptq']['peak_rss_bytes'] / 2**20:.0f} MiB) "
              f"| {r['imported_logits_difference']:.1e} "
              + (f"| {r['torch']['seconds']:.0f} s ({r['torch']['peak_rss_bytes'] / 2**20:.0f} MiB), "
                 f"{r['torch_ratio']:.2f}x ours |" if "torch" in r else "| - |"))
    moe = [r for r in records if name_of(r["model"]) in MOE]
    if moe:
        print()
        print("| model | checkpoint (bf16) | memory bound printed | peak RSS quantize (/ checkpoint) "
              "| largest peak RSS / checkpoint (phase) | at most 1.5x "
              "| tokens per expert: min / median / max (even share) | rounded to nearest |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in moe:
            t = r["expert_tokens"]
            print(f"| {r['model']} | {r['checkpoint_bytes'] / 1e9:.2f} GB "
                  f"| {r['quantize'].get('memory_bound_mib', '-')} MiB "
                  f"| {r['quantize']['peak_rss_bytes'] / 2**20:.0f} MiB "
                  f"({r['quantize']['peak_rss_bytes'] / r['checkpoint_bytes']:.2f}x) "
                  f"| {r['peak_over_checkpoint']:.2f}x ({r['largest_peak_phase']}) "
                  f"| {'yes' if r['peak_over_checkpoint'] <= 1.5 else 'no'} "
                  f"| {t['min']} / {t['median']:.0f} / {t['max']} ({t['even_share']:.0f}) "
                  f"| {t['experts_rounded_to_nearest']} of {3 * t['experts']} expert layers "
                  f"({t['rounded_to_nearest']} in all) |")
    if args.json:
        args.json.write_text(json.dumps(records, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
