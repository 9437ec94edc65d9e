"""Whole-model GPTQ of a Hugging Face Llama checkpoint in PyTorch: the
competitor of bench/bench_scale.py on models of real size.

The reference's sequential Llama driver (docs/gptq-semantics.md, section 6),
as bench/torch_gptq_model.py runs it on llama2.c checkpoints, over
transformers' LlamaForCausalLM in float32: embed the calibration windows;
for each decoder layer and each true-sequential group (q, k, v; o; gate,
up; down), run the layer on every window with forward hooks accumulating
each projection's Hessian, quantize the group with bench/torch_gptq.py and
write the dequantized weights back; rerun the layer with its weights
quantized for the next layer's inputs. The embedding and the classifier
stay float. It holds the whole model in float32, as the reference does
(Llama-3.2-1B: 5 GB; Llama-3.1-8B does not fit this machine's 24 GB).

    .venv/bin/python bench/torch_gptq_hf.py /tmp/scale/ckpt-1b-16 --calibration calib.npy \\
        --bits 4 --group-size 128 --act-order on [--threads N] [--json out.json]

Prints the phases' seconds and the peak RSS.
"""

import argparse
import json
import os
import resource
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from torch_gptq import gptq_quantize  # noqa: E402
from torch_gptq_model import HessianAccumulator  # noqa: E402

#: The true-sequential groups of a Llama decoder layer, by module path.
GROUPS = (
    ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"),
    ("self_attn.o_proj",),
    ("mlp.gate_proj", "mlp.up_proj"),
    ("mlp.down_proj",),
)


def module(layer: torch.nn.Module, path: str) -> torch.nn.Linear:
    for part in path.split("."):
        layer = getattr(layer, part)
    return layer


@torch.no_grad()
def quantize(model, windows: torch.Tensor, bits: int, group_size: int, act_order: bool, log) -> dict:
    seq = windows.shape[1]
    positions = torch.arange(seq)[None]
    mask = torch.full((seq, seq), float("-inf")).triu(1)[None, None]
    inputs = [model.model.embed_tokens(windows[j : j + 1]) for j in range(len(windows))]
    rotary = model.model.rotary_emb(inputs[0], positions)

    def run(layer, x):
        return layer(x, attention_mask=mask, position_ids=positions, position_embeddings=rotary)[0]

    timing = {"forward": 0.0, "quantize": 0.0}
    for i, layer in enumerate(model.model.layers):
        for group in GROUPS:
            accumulators = {p: HessianAccumulator(module(layer, p).in_features) for p in group}
            handles = [module(layer, p).register_forward_hook(
                lambda _m, inp, _o, acc=accumulators[p]: acc.add_batch(inp[0].data)) for p in group]
            t0 = time.perf_counter()
            try:
                for x in inputs:
                    run(layer, x)
            finally:
                for handle in handles:
                    handle.remove()
            timing["forward"] += time.perf_counter() - t0
            t0 = time.perf_counter()
            for p in group:
                linear = module(layer, p)
                Q, _ = gptq_quantize(linear.weight.data, accumulators[p].H, bits, group_size, False, act_order,
                                     False, 0.01, 128)
                linear.weight.data.copy_(Q)
            timing["quantize"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        inputs = [run(layer, x) for x in inputs]
        timing["forward"] += time.perf_counter() - t0
        print(f"layer {i + 1}/{len(model.model.layers)}: {sum(timing.values()):.0f} s", file=log, flush=True)
    return timing


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", help="Hugging Face checkpoint folder (LlamaForCausalLM)")
    parser.add_argument("--calibration", required=True, help=".npy of int32 token ids [windows, tokens]")
    parser.add_argument("--bits", type=int, default=4)
    parser.add_argument("--group-size", type=int, default=128)
    parser.add_argument("--act-order", choices=["on", "off"], default="on")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    from transformers import LlamaForCausalLM

    start = time.perf_counter()
    model = LlamaForCausalLM.from_pretrained(args.checkpoint, torch_dtype=torch.float32,
                                             attn_implementation="eager")
    model.eval()
    load = time.perf_counter() - start
    windows = torch.from_numpy(np.load(args.calibration).astype(np.int64))
    timing = quantize(model, windows, args.bits, args.group_size, args.act_order == "on", sys.stderr)
    record = {
        "engine": "torch", "threads": torch.get_num_threads(), "load_seconds": load,
        "forward_seconds": timing["forward"], "quantize_seconds": timing["quantize"],
        "total_seconds": time.perf_counter() - start,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }
    print(json.dumps(record))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(record, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
