"""Each expert's Hessian, as gptq-quantize-model accumulates it from the
tokens its router sends it, against one computed with forward hooks on the
reference model (transformers' Mixtral, Qwen 2 MoE, OLMoE and PhiMoE,
float32): the rows each expert's projections are called with, ``2/n X^T X``
with ``n`` the samples as the reference procedure counts them (a call of
the block, ``[rows, in]``, is one sample; a ``[windows, tokens, in]`` input
is one per window).

``sequential=none``: the Hessians of the float model, which is what hooks on
the float reference model see. The calibration batches are mixed stages (the
attention's ``[B, S, in]`` inputs beside the experts' ``[rows, in]``), so
each Hessian's own sample count is what these compare. The report's tokens
of each expert are the rows its hooks saw.

Skips without transformers (scripts/test-deps.sh installs it)."""

import json
from pathlib import Path
from typing import Dict

import numpy as np
import pytest

import hf_models
from gptq_mlir.cli.commands import main
from gptq_mlir.runtime import runner

#: Our names of an expert's projections -> each architecture's module names.
PROJECTIONS = {
    "mixtral": {"w1": "w1", "w3": "w3", "w2": "w2"},
    "qwen1.5-moe": {"w1": "gate_proj", "w3": "up_proj", "w2": "down_proj"},
    "olmoe": {"w1": "gate_proj", "w3": "up_proj", "w2": "down_proj"},
    "phimoe": {"w1": "w1", "w3": "w3", "w2": "w2"},
}
WINDOWS, TOKENS, BATCH = 16, 32, 8


def _hooked_hessians(folder: Path, tokens: np.ndarray, name: str):
    """(Hessian by our layer name, rows by our layer name) from forward
    hooks on the reference model's expert (and shared expert) projections,
    run on ``tokens`` in batches of BATCH windows."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    sums: Dict[str, np.ndarray] = {}
    rows: Dict[str, int] = {}
    windowed = set()

    def hook(ours: str, per_window: bool):
        def record(module, args):
            x = args[0].detach().double().reshape(-1, args[0].shape[-1]).numpy()
            sums[ours] = sums.get(ours, 0) + x.T @ x
            rows[ours] = rows.get(ours, 0) + len(x)
            if per_window:
                windowed.add(ours)
        return record

    for i, layer in enumerate(model.model.layers):
        block = layer.block_sparse_moe if name in ("mixtral", "phimoe") else layer.mlp
        if not hasattr(block, "experts"):
            continue  # a dense layer (Qwen 2 MoE's mlp_only_layers)
        for e, expert in enumerate(block.experts):
            for ours, theirs in PROJECTIONS[name].items():
                getattr(expert, theirs).register_forward_pre_hook(
                    hook(f"layers.{i}.feed_forward.experts.{e}.{ours}", False))
        if getattr(block, "shared_expert", None) is not None:
            for ours, theirs in PROJECTIONS[name].items():
                getattr(block.shared_expert, theirs).register_forward_pre_hook(
                    hook(f"layers.{i}.feed_forward.shared_expert.{ours}", True))
    with torch.no_grad():
        for start in range(0, len(tokens), BATCH):
            model(torch.from_numpy(tokens[start:start + BATCH]).long(), use_cache=False)
    # An expert's samples are the calls of its block, one per batch, whether
    # or not the router sent it a token then (PhiMoE's block skips calling
    # such an expert); ours reads the shared expert's input as [B, S, in]: a
    # sample per window.
    calls = len(tokens) // BATCH
    return {k: 2 * sums[k] / (len(tokens) if k in windowed else calls) for k in sums}, rows


@pytest.mark.parametrize("name", list(PROJECTIONS))
def test_each_expert_hessian_equals_the_hooked_reference(tmp_path, gptq_opt, name):
    pytest.importorskip("transformers", reason="transformers is not installed (scripts/test-deps.sh installs it)")
    folder = hf_models.write_checkpoint(name, tmp_path / "ckpt")
    module = tmp_path / "model.mlir"
    assert main(["import-hf", str(folder), "-o", str(module)]) == 0
    vocab = hf_models.CONFIGS[name]["vocab_size"]
    tokens = np.random.default_rng(7).integers(0, vocab, size=(WINDOWS, TOKENS)).astype(np.int32)
    np.save(tmp_path / "calib.npy", tokens)
    runner.run_opt(module, tmp_path / "q.mlir", [
        f"--gptq-quantize-model=calibration={tmp_path / 'calib.npy'} calibration-batch={BATCH} sequential=none "
        f"method=gptq format=float layer-errors=false dump-hessians={tmp_path / 'h.npz'} "
        f"report={tmp_path / 'report.json'}"])
    ours = np.load(tmp_path / "h.npz")
    report = {layer["name"]: layer for layer in json.loads((tmp_path / "report.json").read_text())["layers"]}
    theirs, rows = _hooked_hessians(folder, tokens, name)

    experts = [k for k in theirs if ".experts." in k]
    assert len(experts) == 3 * hf_models.CONFIGS[name].get("num_local_experts", hf_models.CONFIGS[name].get(
        "num_experts")) * sum(1 for k in theirs if k.endswith(".experts.0.w1"))
    for layer, reference in theirs.items():
        error = np.abs(ours[layer] - reference).max() / np.abs(reference).max()
        assert error < 1e-5, (layer, error)
        assert report[layer]["tokens"] == rows[layer], layer
    # The routing is uneven: the comparison covers experts that saw few
    # tokens and many.
    counts = [rows[k] for k in experts]
    assert min(counts) < max(counts)
