"""Whole-model GPTQ of a llama2.c checkpoint in PyTorch: the oracle.

The reference's Llama driver (docs/gptq-semantics.md, section 6), written by
us in PyTorch, against which `gptq-opt --gptq-quantize-model` is compared. It
is a benchmark and a cross-check, not part of the product: the model runs as
`gptq_mlir.importers.torch_model.Llama2c` (PyTorch, not the MLIR path), each layer is
quantized by `bench/torch_gptq.py`.

The procedure (default `--sequential layers`):

1. embed the calibration windows (N x L token ids); keep every window's block
   input;
2. for each block in order, for each true-sequential group
   {wq, wk, wv}, {wo}, {w1, w3}, {w2}: run the block on every window, one
   window at a time, with forward hooks accumulating each layer's Hessian
   from the input it sees (the reference's `add_batch` with nb = 1, so
   H = 2/N * sum of x x^T over all tokens); then quantize every layer of the
   group against its Hessian and write the dequantized weights back;
3. rerun the block on every window with all its weights quantized; those
   outputs are the next block's inputs.

`--sequential blocks`: one group of all seven layers per block (the reference
without true-sequential). `--sequential none`: every Hessian from the float
model (each block's inputs are the float outputs of the block before).
`--method rtn`: round-to-nearest, no calibration: one grid per row, or per
row and group of consecutive columns (act-order does not apply).
The token embedding and the tied classifier stay float.

Perplexity is measured as `python -m gptq_mlir perplexity` does: the held-out
paragraphs (`--eval-start-fraction`, default 0.8, to the end), tokenized into
one stream, cut into consecutive windows of `--eval-seqlen` tokens (the tail
dropped), each window from position 0, exp(mean NLL of tokens 1..L-1) in
float64.

Calibration windows are the ones `python -m gptq_mlir calib` makes
(`--samples`, `--seqlen`, `--seed`, from the first `--calib-end-fraction` of
the text), or a file it made (`--calibration FILE.npy`).

    .venv/bin/python bench/torch_gptq_model.py --bits 4,3 --method gptq,rtn \\
        [--group-size -1,128] [--act-order off|on|both] [--sequential layers] \\
        [--json results.json] [--save-weights DIR] [--save-hessians]
"""

import argparse
import dataclasses
import itertools
import json
import math
import os
import sys
import time
from typing import List, Optional, Sequence

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "python"))
from torch_gptq import Grid, gptq_quantize, quantize  # noqa: E402

from gptq_mlir.data import corpus  # noqa: E402
from gptq_mlir.data.tokenizer import load_tokenizer  # noqa: E402
from gptq_mlir.errors import GPTQError  # noqa: E402
from gptq_mlir.importers import llama2c
from gptq_mlir.importers.torch_model import Llama2c  # noqa: E402

STORIES = os.path.join(REPO, "data", "stories260K")

#: The linear layers of a block, by their name inside the block.
BLOCK_LAYERS = (
    "attention.wq",
    "attention.wk",
    "attention.wv",
    "attention.wo",
    "feed_forward.w1",
    "feed_forward.w3",
    "feed_forward.w2",
)
#: The reference's true-sequential groups for a Llama block.
TRUE_SEQUENTIAL = (
    ("attention.wq", "attention.wk", "attention.wv"),
    ("attention.wo",),
    ("feed_forward.w1", "feed_forward.w3"),
    ("feed_forward.w2",),
)
SEQUENTIAL_MODES = ("layers", "blocks", "none")


@dataclasses.dataclass(frozen=True)
class Config:
    """One quantization setting, the same for every layer."""

    method: str = "gptq"  # gptq | rtn
    bits: int = 4
    group_size: int = -1  # -1: one grid per row
    act_order: bool = False
    sym: bool = False
    static_groups: bool = False
    percdamp: float = 0.01
    block_size: int = 128

    @property
    def label(self) -> str:
        """A short name, also the file name of its saved weights."""
        group = "row" if self.group_size == -1 else f"g{self.group_size}"
        text = f"{self.method}-w{self.bits}-{group}"
        if self.method == "gptq" and self.act_order:
            text += "-act"
        if self.sym:
            text += "-sym"
        if self.method == "gptq" and self.static_groups:
            text += "-static"
        return text


class HessianAccumulator:
    """The reference's `GPTQ.add_batch` for a linear layer, in float32."""

    def __init__(self, cols: int):
        self.H = torch.zeros(cols, cols, dtype=torch.float32)
        self.nsamples = 0

    def add_batch(self, inp: torch.Tensor) -> None:
        if inp.dim() == 2:
            inp = inp.unsqueeze(0)
        count = inp.shape[0]
        inp = inp.reshape(-1, inp.shape[-1]).t()
        self.H *= self.nsamples / (self.nsamples + count)
        self.nsamples += count
        inp = math.sqrt(2 / self.nsamples) * inp.float()
        self.H += inp.matmul(inp.t())


def build_model(checkpoint: llama2c.Llama2cCheckpoint) -> Llama2c:
    """A fresh float32 PyTorch model holding the checkpoint's weights."""
    return Llama2c.from_checkpoint(checkpoint)


def linear(block: torch.nn.Module, name: str) -> torch.nn.Linear:
    """The nn.Linear of ``block`` called ``name`` (``attention.wq``, ...)."""
    return block.get_submodule(name)


def rtn_quantize(W: torch.Tensor, bits: int, group_size: int, sym: bool) -> torch.Tensor:
    """Round-to-nearest: min-max grid per row, or per row and column group."""
    W = W.float()
    step = W.shape[1] if group_size == -1 else group_size
    Q = torch.empty_like(W)
    for c in range(0, W.shape[1], step):
        part = W[:, c : c + step]
        grid = Grid(bits, sym).find_params(part)
        Q[:, c : c + step] = quantize(part, grid.scale, grid.zero, grid.maxq)
    return Q


def _rope(model: Llama2c, seq: int):
    return model.freq_cis_real[:seq], model.freq_cis_imag[:seq]


@torch.no_grad()
def quantize_model(
    checkpoint: llama2c.Llama2cCheckpoint,
    windows: np.ndarray,
    config: Config,
    sequential: str = "layers",
    keep_hessians: bool = False,
    log=None,
):
    """Quantize every block linear layer of ``checkpoint``.

    Returns ``(model, report)``: the PyTorch model with the dequantized
    weights written back, and a dict with ``weights`` (name -> dequantized
    float32 array), ``layers`` (name -> {loss, seconds}), ``hessians``
    (name -> H, when ``keep_hessians``) and ``seconds``.
    """
    if sequential not in SEQUENTIAL_MODES:
        raise ValueError(f"sequential must be one of {SEQUENTIAL_MODES}, got {sequential!r}")
    start = time.perf_counter()
    model = build_model(checkpoint)
    report = {"weights": {}, "layers": {}, "hessians": {}}

    def quantize_layer(name: str, module: torch.nn.Linear, H: Optional[torch.Tensor]) -> None:
        t0 = time.perf_counter()
        W = module.weight.data
        if config.method == "rtn":
            Q, loss = rtn_quantize(W, config.bits, config.group_size, config.sym), None
        else:
            try:
                Q, loss = gptq_quantize(
                    W, H, config.bits, config.group_size, config.sym, config.act_order,
                    config.static_groups, config.percdamp, config.block_size,
                )
            except RuntimeError as error:  # Cholesky failure: the reference aborts too
                raise RuntimeError(f"{name}: {error}") from error
        module.weight.data.copy_(Q)
        report["weights"][name] = Q.numpy().copy()
        report["layers"][name] = {"loss": loss, "seconds": time.perf_counter() - t0}
        if log is not None:
            loss_text = "" if loss is None else f" loss {loss:.6g}"
            print(f"  {name} {tuple(W.shape)}{loss_text}", file=log, flush=True)

    if config.method == "rtn":
        for i, block in enumerate(model.layers):
            for short in BLOCK_LAYERS:
                quantize_layer(f"layers.{i}.{short}", linear(block, short), None)
        report["seconds"] = time.perf_counter() - start
        return model, report

    tokens = torch.from_numpy(np.asarray(windows, dtype=np.int64))
    cos, sin = _rope(model, tokens.shape[1])
    inputs = [model.tok_embeddings(tokens[j : j + 1]) for j in range(len(tokens))]
    groups = TRUE_SEQUENTIAL if sequential == "layers" else (BLOCK_LAYERS,)
    for i, block in enumerate(model.layers):
        outputs = None
        for group in groups:
            accumulators = {short: HessianAccumulator(linear(block, short).in_features) for short in group}
            handles = [
                linear(block, short).register_forward_hook(
                    lambda _module, inp, _out, acc=accumulators[short]: acc.add_batch(inp[0].data)
                )
                for short in group
            ]
            try:
                outputs = [block(x, cos, sin) for x in inputs]
            finally:
                for handle in handles:
                    handle.remove()
            for short in group:
                name = f"layers.{i}.{short}"
                H = accumulators[short].H
                if keep_hessians:
                    report["hessians"][name] = H.numpy().copy()
                quantize_layer(name, linear(block, short), H)
        if sequential == "none":
            # The outputs of the (float) calibration pass feed the next block.
            inputs = outputs
        else:
            inputs = [block(x, cos, sin) for x in inputs]
    report["seconds"] = time.perf_counter() - start
    return model, report


@torch.no_grad()
def perplexity(model: Llama2c, windows: np.ndarray, batch: int = 32) -> float:
    """exp(mean NLL of tokens 1..L-1 of each window), as gptq_mlir's perplexity."""
    total = 0.0
    for start in range(0, len(windows), batch):
        chunk = torch.from_numpy(np.asarray(windows[start : start + batch], dtype=np.int64))
        logits = model(chunk)[:, :-1].double()
        logp = torch.log_softmax(logits, dim=-1)
        total -= logp.gather(-1, chunk[:, 1:, None]).sum().item()
    return math.exp(total / (windows.shape[0] * (windows.shape[1] - 1)))


def calibration_windows(tokenizer_path, text_path, samples, seqlen, seed, end_fraction=0.8):
    """The windows `python -m gptq_mlir calib --end-fraction F` writes."""
    stream = corpus.load_corpus(load_tokenizer(tokenizer_path), text_path, 0.0, end_fraction)
    return corpus.calibration_windows(stream, samples, seqlen, seed)


def heldout_windows(tokenizer_path, text_path, seqlen, start_fraction=0.8):
    """The windows `python -m gptq_mlir perplexity --start-fraction F` scores."""
    stream = corpus.load_corpus(load_tokenizer(tokenizer_path), text_path, start_fraction, 1.0)
    return corpus.consecutive_windows(stream, seqlen)


def configs_from(methods: Sequence[str], bits: Sequence[int], group_sizes: Sequence[int],
                 act_order: str, sym: bool, static_groups: bool, percdamp: float,
                 block_size: int) -> List[Config]:
    """The product of the requested settings; round-to-nearest once per (bits, group)."""
    orders = {"off": [False], "on": [True], "both": [False, True]}[act_order]
    result: List[Config] = []
    for method, b, g, order in itertools.product(methods, bits, group_sizes, orders):
        if method == "rtn":
            order = False
        config = Config(method, b, g, order, sym, static_groups and method == "gptq", percdamp, block_size)
        if config not in result:
            result.append(config)
    return result


def _int_list(text: str) -> List[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def _str_list(choices):
    def parse(text: str) -> List[str]:
        items = [part.strip() for part in text.split(",") if part.strip()]
        for item in items:
            if item not in choices:
                raise argparse.ArgumentTypeError(f"expected one of {', '.join(choices)}, got {item!r}")
        return items

    return parse


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", default=os.path.join(STORIES, "stories260K.bin"))
    ap.add_argument("--tokenizer", default=os.path.join(STORIES, "tok512.bin"))
    ap.add_argument("--text", default=os.path.join(STORIES, "tinystories_val_part1.txt"))
    ap.add_argument("--calibration", help="int32 [N, L] .npy from `python -m gptq_mlir calib` "
                    "(default: made here from --samples/--seqlen/--seed)")
    ap.add_argument("--samples", type=int, default=128)
    ap.add_argument("--seqlen", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--calib-end-fraction", type=float, default=0.8)
    ap.add_argument("--eval-start-fraction", type=float, default=0.8)
    ap.add_argument("--eval-seqlen", type=int, default=256)
    ap.add_argument("--eval-windows", type=int, default=0,
                    help="score only the first N held-out windows (0: all)")
    ap.add_argument("--method", type=_str_list(("gptq", "rtn")), default=["gptq", "rtn"])
    ap.add_argument("--bits", type=_int_list, default=[4, 3])
    ap.add_argument("--group-size", type=_int_list, default=[-1])
    ap.add_argument("--act-order", choices=("off", "on", "both"), default="off")
    ap.add_argument("--sym", action="store_true")
    ap.add_argument("--static-groups", action="store_true")
    ap.add_argument("--percdamp", type=float, default=0.01)
    ap.add_argument("--block-size", type=int, default=128)
    ap.add_argument("--sequential", choices=SEQUENTIAL_MODES, default="layers")
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads(N) (0: as is)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--save-weights", metavar="DIR",
                    help="write DIR/<config>.npz: dequantized weights by layer name")
    ap.add_argument("--save-hessians", action="store_true",
                    help="with --save-weights, also DIR/<config>.hessians.npz (GPTQ only)")
    ap.add_argument("--quiet", action="store_true", help="no per-layer lines on stderr")
    args = ap.parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)

    try:
        return run(args)
    except (GPTQError, OSError, ValueError, RuntimeError) as error:
        print(f"torch_gptq_model: error: {error}", file=sys.stderr)
        return 1


def run(args: argparse.Namespace) -> int:
    checkpoint = llama2c.read_checkpoint(args.checkpoint)
    if args.calibration:
        windows = np.load(args.calibration, allow_pickle=False)
        if windows.dtype != np.int32 or windows.ndim != 2 or 0 in windows.shape:
            raise GPTQError(f"{args.calibration}: expected int32 [N, L] token ids, "
                            f"got {windows.dtype} {list(windows.shape)}")
        vocab = checkpoint.config.vocab_size
        if windows.min() < 0 or windows.max() >= vocab:
            raise GPTQError(f"{args.calibration}: token ids must lie in [0, {vocab}), "
                            f"got [{windows.min()}, {windows.max()}]")
        source = args.calibration
    else:
        windows = calibration_windows(args.tokenizer, args.text, args.samples, args.seqlen,
                                      args.seed, args.calib_end_fraction)
        source = (f"{args.text} [0, {args.calib_end_fraction}) seed {args.seed}")
    heldout = heldout_windows(args.tokenizer, args.text, args.eval_seqlen, args.eval_start_fraction)
    if args.eval_windows > 0:
        heldout = heldout[: args.eval_windows]
    configs = configs_from(args.method, args.bits, args.group_size, args.act_order, args.sym,
                           args.static_groups, args.percdamp, args.block_size)
    print(f"calibration: {windows.shape[0]} x {windows.shape[1]} from {source}; "
          f"held-out: {heldout.shape[0]} x {heldout.shape[1]}; sequential {args.sequential}; "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads", file=sys.stderr)

    t0 = time.perf_counter()
    results = [{"label": "float32", "method": "float32", "bits": 32, "group_size": None,
                "act_order": None, "perplexity": perplexity(build_model(checkpoint), heldout),
                "seconds": 0.0, "eval_seconds": time.perf_counter() - t0}]
    log = None if args.quiet else sys.stderr
    for config in configs:
        if log is not None:
            print(f"{config.label}:", file=log, flush=True)
        model, report = quantize_model(checkpoint, windows, config, args.sequential,
                                       keep_hessians=args.save_hessians, log=log)
        t0 = time.perf_counter()
        ppl = perplexity(model, heldout)
        results.append({"label": config.label, **dataclasses.asdict(config), "perplexity": ppl,
                        "seconds": report["seconds"], "eval_seconds": time.perf_counter() - t0,
                        "layers": report["layers"]})
        if args.save_weights:
            os.makedirs(args.save_weights, exist_ok=True)
            np.savez(os.path.join(args.save_weights, config.label + ".npz"), **report["weights"])
            if args.save_hessians and report["hessians"]:
                np.savez(os.path.join(args.save_weights, config.label + ".hessians.npz"),
                         **report["hessians"])

    print("| method | bits | group size | act-order | perplexity | seconds |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in results:
        group = "" if r["group_size"] is None else ("row" if r["group_size"] == -1 else str(r["group_size"]))
        order = "" if r["act_order"] is None else ("yes" if r["act_order"] else "no")
        print(f"| {r['method']} | {r['bits']} | {group} | {order} | {r['perplexity']:.4f} | {r['seconds']:.1f} |")
    if args.json:
        meta = {"checkpoint": args.checkpoint, "calibration": source,
                "calibration_shape": list(windows.shape), "heldout_shape": list(heldout.shape),
                "sequential": args.sequential, "torch": torch.__version__}
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"meta": meta, "results": results}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
