"""Write a llama2.c checkpoint of a given shape with random weights.

For benchmarks that need a model of a real model's shape but not its
weights: the file is made in seconds from a seed, so it is not committed.
Weights are drawn in the order of the checkpoint's layout from
``numpy.random.default_rng(seed)``: every matrix (the token embedding, the
attention and feed-forward weights, an untied classifier) from N(0, std^2)
(``--std``, default 0.02, as GPT-2 and Llama initialise), every RMSNorm
weight 1, so that activations and logits keep a sane scale through the
layers. The rotary tables are llama2.c's. The same arguments give the same
bytes.

Presets (``--shape``; any field can be overridden, e.g. ``--n-layers 2``):

| preset | dim | layers | heads | kv heads | hidden | vocab | seq_len | classifier |
| --- | --- | --- | --- | --- | --- | --- | --- | --- |
| 110m | 768 | 12 | 12 | 12 | 2048 | 32000 | 1024 | shared (stories110M's shape) |
| 15m | 288 | 6 | 6 | 6 | 768 | 32000 | 256 | shared (stories15M's shape) |

    .venv/bin/python bench/make_checkpoint.py --shape 110m -o build/bench-model/110m.bin
    .venv/bin/python bench/make_checkpoint.py --dim 32 --hidden-dim 64 --n-layers 2 \\
        --n-heads 4 --n-kv-heads 2 --vocab-size 64 --seq-len 32 -o tiny.bin
"""

import argparse
import dataclasses
import os
import sys
from typing import Dict, Optional

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "python"))

from gptq_mlir.errors import GPTQError  # noqa: E402
from gptq_mlir.files.outputs import atomic_output  # noqa: E402
from gptq_mlir.importers import llama2c  # noqa: E402

#: Shapes of the stories models (llama2.c's ``export.py`` headers).
PRESETS: Dict[str, llama2c.Llama2cConfig] = {
    "110m": llama2c.Llama2cConfig(
        dim=768, hidden_dim=2048, n_layers=12, n_heads=12, n_kv_heads=12,
        vocab_size=32000, seq_len=1024, shared_classifier=True,
    ),
    "15m": llama2c.Llama2cConfig(
        dim=288, hidden_dim=768, n_layers=6, n_heads=6, n_kv_heads=6,
        vocab_size=32000, seq_len=256, shared_classifier=True,
    ),
}
FIELDS = ("dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len")


def config_for(shape: Optional[str] = None, **overrides) -> llama2c.Llama2cConfig:
    """The preset ``shape`` (or no preset: every field must be given) with
    the non-None ``overrides`` applied; raises GPTQError if it is not a
    well-formed model."""
    if shape is not None and shape not in PRESETS:
        raise GPTQError(f"unknown shape {shape!r}, expected one of {', '.join(PRESETS)}")
    given = {k: v for k, v in overrides.items() if v is not None}
    unknown = set(given) - set(FIELDS) - {"shared_classifier"}
    if unknown:
        raise GPTQError(f"unknown config fields {sorted(unknown)}")
    if shape is None:
        missing = [f for f in FIELDS if f not in given]
        if missing:
            raise GPTQError("without --shape, give every field; missing "
                            + ", ".join("--" + f.replace("_", "-") for f in missing))
        cfg = llama2c.Llama2cConfig(**given)
    else:
        cfg = dataclasses.replace(PRESETS[shape], **given)
    cfg.validate()
    return cfg


def random_checkpoint(cfg: llama2c.Llama2cConfig, seed: int = 0, std: float = 0.02) -> llama2c.Llama2cCheckpoint:
    """A legacy-format checkpoint of shape ``cfg`` with random weights
    (matrices N(0, std^2) in layout order, norms 1, llama2.c's rotary tables)."""
    rng = np.random.default_rng(seed)
    weights: Dict[str, np.ndarray] = {}
    for name, shape in llama2c.weight_layout(cfg, 0):
        if name.startswith("freq_cis"):
            continue
        if len(shape) == 1:
            weights[name] = np.ones(shape, dtype=np.float32)
        else:
            array = rng.standard_normal(shape, dtype=np.float32)
            array *= np.float32(std)
            weights[name] = array
    weights["freq_cis_real"], weights["freq_cis_imag"] = llama2c.rope_tables(cfg.head_size, cfg.seq_len)
    return llama2c.Llama2cCheckpoint(cfg, weights, 0)


def write_checkpoint(path, cfg: llama2c.Llama2cConfig, seed: int = 0, std: float = 0.02) -> int:
    """Write the checkpoint of :func:`random_checkpoint` to ``path``
    atomically; returns its size in bytes."""
    checkpoint = random_checkpoint(cfg, seed, std)
    data = llama2c.serialize_checkpoint(cfg, checkpoint.weights, 0)
    del checkpoint
    with atomic_output(path) as handle:
        handle.write(data)
    return len(data)


def parameter_count(cfg: llama2c.Llama2cConfig) -> int:
    """Weights of the model (rotary tables not counted)."""
    return llama2c.body_floats(cfg, 1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", choices=sorted(PRESETS), help="a preset shape (overridable field by field)")
    for field in FIELDS:
        ap.add_argument("--" + field.replace("_", "-"), type=int, dest=field)
    ap.add_argument("--shared-classifier", dest="shared_classifier", action="store_true", default=None,
                    help="the classifier is the token embedding (the presets' default)")
    ap.add_argument("--untied-classifier", dest="shared_classifier", action="store_false",
                    help="store a classifier of its own")
    ap.add_argument("--seed", type=int, default=0, help="numpy default_rng seed (default 0)")
    ap.add_argument("--std", type=float, default=0.02, help="standard deviation of the matrices (default 0.02)")
    ap.add_argument("-o", "--output", required=True, help="the checkpoint file to write")
    args = ap.parse_args(argv)
    try:
        if not args.std > 0 or not np.isfinite(args.std):
            raise GPTQError(f"--std {args.std}: expected a positive finite number")
        overrides = {f: getattr(args, f) for f in FIELDS}
        overrides["shared_classifier"] = args.shared_classifier
        cfg = config_for(args.shape, **overrides)
        size = write_checkpoint(args.output, cfg, args.seed, args.std)
    except GPTQError as error:
        print(f"make_checkpoint: error: {error}", file=sys.stderr)
        return 1
    print(f"make_checkpoint: wrote {args.output}: {size} bytes, {parameter_count(cfg)} parameters, "
          f"{cfg}, seed {args.seed}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
