"""GPTQModel's GPTQ of a Hugging Face folder on the CPU, on given token
windows: the competitor side of bench/bench_gptq_tools.py. Runs in
.venv-gptqmodel (scripts/gptqmodel-venv.sh), not in the project's venv.

    .venv-gptqmodel/bin/python bench/gptqmodel_quantize.py FOLDER --calibration calib.npy \\
        --out OUT --json figures.json [--bits 4 --group-size 128 --act-order]

The windows are the int32 [N, L] .npy that our gptq-opt reads, given to
GPTQModel as token ids with a full attention mask (no tokenizer runs on
them). The configuration is ours: asymmetric, damping 1% of the mean
diagonal, true-sequential, no MSE grid search, act-order as asked
(desc_act; GPTQModel's own default, act_group_aware, is off). It writes
its figures (seconds of load, quantize and save; each layer's loss as
GPTQModel computes it) to --json.
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path


def with_tokenizer(folder: Path, work: Path) -> Path:
    """A folder of links to ``folder``'s files with a word-level tokenizer of
    the model's vocabulary beside them, when ``folder`` has none: GPTQModel
    loads a tokenizer with every model, though token ids need none, and
    bench/make_hf_checkpoint.py writes weights and config only."""
    if (folder / "tokenizer.json").exists() or (folder / "tokenizer.model").exists():
        return folder
    from tokenizers import Tokenizer, models, pre_tokenizers
    config = json.loads((folder / "config.json").read_text())
    work.mkdir(parents=True, exist_ok=True)
    for item in folder.iterdir():
        link = work / item.name
        if not link.exists():
            link.symlink_to(item.resolve())
    vocab = {f"<t{i}>": i for i in range(config["vocab_size"])}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<t0>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.save(str(work / "tokenizer.json"))
    bos, eos = config.get("bos_token_id", 0), config.get("eos_token_id", 0)
    eos = eos[0] if isinstance(eos, list) else eos
    (work / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": f"<t{bos}>", "eos_token": f"<t{eos}>",
        "unk_token": "<t0>", "model_max_length": config.get("max_position_embeddings", 2048)}))
    return work


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--calibration", type=Path, required=True, help="int32 [N, L] token windows (.npy)")
    parser.add_argument("--out", type=Path, required=True, help="folder for the quantized checkpoint")
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--bits", type=int, default=4)
    parser.add_argument("--group-size", type=int, default=128)
    parser.add_argument("--act-order", action="store_true")
    parser.add_argument("--percdamp", type=float, default=0.01)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--dtype", choices=("auto", "float32", "bfloat16"), default="auto",
                        help="the model's dtype in GPTQModel (default auto: GPTQModel's choice, bfloat16 on a "
                             "CPU with AVX-512 BF16 or AMX)")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    # GPTQModel's CPU pool has (cores + 1) // 2 workers and its model loader
    # asks for two of them, which a two-core machine refuses.
    os.environ.setdefault("GPTQMODEL_CPU_WORKERS", str(max(2, (os.cpu_count() or 1 + 1) // 2)))
    import numpy as np
    import torch
    import gptqmodel
    from gptqmodel import GPTQModel, QuantizeConfig
    torch.set_num_threads(args.threads)
    imported = time.perf_counter()

    windows = np.load(args.calibration)
    calibration = [{"input_ids": torch.from_numpy(w.astype(np.int64))[None],
                    "attention_mask": torch.ones(1, w.shape[0], dtype=torch.int64)} for w in windows]
    config = QuantizeConfig(bits=args.bits, group_size=args.group_size, desc_act=args.act_order,
                            act_group_aware=False, sym=False, damp_percent=args.percdamp,
                            true_sequential=True, offload_to_disk=False)
    scratch = tempfile.TemporaryDirectory(prefix="gptqmodel-")
    folder = with_tokenizer(args.folder, Path(scratch.name) / "model")
    dtype = {"auto": {}, "float32": {"dtype": torch.float32}, "bfloat16": {"dtype": torch.bfloat16}}[args.dtype]
    model = GPTQModel.load(str(folder), config, device="cpu", **dtype)
    loaded = time.perf_counter()
    log = model.quantize(calibration, batch_size=1)
    quantized = time.perf_counter()
    model.save(str(args.out))
    saved = time.perf_counter()

    layers = []
    for entry in (log or {}).get("gptq", []) if isinstance(log, dict) else []:
        layers.append({k: entry.get(k) for k in ("layer", "module", "loss", "samples", "damp", "time")})
    figures = {"gptqmodel_version": gptqmodel.__version__, "torch_version": torch.__version__,
               "threads": torch.get_num_threads(), "samples": int(windows.shape[0]),
               "dtype": str(getattr(model.model, "dtype", "")).replace("torch.", ""),
               "seqlen": int(windows.shape[1]),
               "seconds": {"import": imported - start, "load": loaded - imported,
                           "quantize": quantized - loaded, "save": saved - quantized,
                           "total": saved - start},
               "quant_log": log, "layers": layers}
    args.json.write_text(json.dumps(figures, indent=2, default=str) + "\n")
    print(f"gptqmodel {gptqmodel.__version__}: load {loaded - imported:.1f} s, quantize {quantized - loaded:.1f} s, "
          f"save {saved - quantized:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
