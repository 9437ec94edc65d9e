"""A PyTorch implementation of Qwen 2 and Qwen 3 decoders and of their
mixtures of experts, for tests.

transformers 4.46, the newest that runs on this project's torch 1.13, has
no Qwen 3 and no Qwen 3 MoE. This implementation is ours, written from the
architectures' description (the Qwen 3 technical report and model cards):
Qwen 2's decoder (RMS norms, grouped-query attention with rotary positions
in Hugging Face's half-rotation convention, SwiGLU) without its q, k and v
biases, with an RMS norm over each head of q and of k (``q_norm``,
``k_norm``, weights of ``head_dim``) applied after the projection and before
the rotation, and a ``head_dim`` that need not be hidden_size /
num_attention_heads. The same code with biases and without head norms is
Qwen 2, which the tests check against transformers' Qwen2ForCausalLM; that
checks everything the two share.

Qwen 3 MoE (``model_type`` ``qwen3_moe``) is Qwen 3 whose feed-forward
layer is, in the layers that ``mlp_only_layers`` does not list and whose
index plus one is a multiple of ``decoder_sparse_step``, a mixture of
``num_experts`` SwiGLU experts of ``moe_intermediate_size``: the router
``mlp.gate`` scores each token, the softmax (float32) over all experts
gives its weights, the token goes to its ``num_experts_per_tok`` heaviest
experts, whose outputs it sums weighted by those weights, renormalized to
sum to 1 when ``norm_topk_prob`` is true (Qwen3-30B-A3B) and as they are
otherwise (Qwen3MoeConfig's default). That block is Qwen 2 MoE's without its
shared expert, so the same code with Qwen 2's biases (``model_type``
``qwen2_moe``) is transformers' Qwen2MoeForCausalLM whose shared expert
outputs zero (its ``down_proj`` zeroed; the shared expert is not
implemented here): the tests check the two agree, for either
``norm_topk_prob``, with a dense layer among the sparse ones. That checks
the mixture exactly (routing, weights, experts, the choice of sparse
layers); what Qwen 3 MoE adds to it is Qwen 3's attention, checked above as
far as Qwen 2's reaches.

Checkpoints are written with the tensor names Qwen 3's repositories use.
"""

import json
from pathlib import Path
from typing import Any, Dict

import numpy as np


def _qwen3(config: Dict[str, Any]) -> bool:
    """Qwen 3's attention (head norms, no biases), else Qwen 2's."""
    return config["model_type"] in ("qwen3", "qwen3_moe")


def sparse(config: Dict[str, Any], layer: int) -> bool:
    """Whether layer ``layer``'s feed-forward layer is a mixture of experts."""
    if not config["model_type"].endswith("_moe"):
        return False
    return (layer not in (config.get("mlp_only_layers") or []) and config.get("num_experts", 0) > 0
            and (layer + 1) % config.get("decoder_sparse_step", 1) == 0)


def _mlp_shapes(prefix: str, hidden: int, inter: int) -> Dict[str, tuple]:
    return {prefix + "gate_proj.weight": (inter, hidden), prefix + "up_proj.weight": (inter, hidden),
            prefix + "down_proj.weight": (hidden, inter)}


def tensor_shapes(config: Dict[str, Any]) -> Dict[str, tuple]:
    hidden, inter = config["hidden_size"], config["intermediate_size"]
    heads, kv = config["num_attention_heads"], config.get("num_key_value_heads", config["num_attention_heads"])
    head_dim = config.get("head_dim") or hidden // heads
    qwen3 = _qwen3(config)
    shapes = {"model.embed_tokens.weight": (config["vocab_size"], hidden), "model.norm.weight": (hidden,)}
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes.update({
            p + "input_layernorm.weight": (hidden,), p + "post_attention_layernorm.weight": (hidden,),
            p + "self_attn.q_proj.weight": (heads * head_dim, hidden),
            p + "self_attn.k_proj.weight": (kv * head_dim, hidden),
            p + "self_attn.v_proj.weight": (kv * head_dim, hidden),
            p + "self_attn.o_proj.weight": (hidden, heads * head_dim),
        })
        if sparse(config, i):
            shapes[p + "mlp.gate.weight"] = (config["num_experts"], hidden)
            for e in range(config["num_experts"]):
                shapes.update(_mlp_shapes(p + f"mlp.experts.{e}.", hidden, config["moe_intermediate_size"]))
        else:
            shapes.update(_mlp_shapes(p + "mlp.", hidden, inter))
        if qwen3:
            shapes[p + "self_attn.q_norm.weight"] = (head_dim,)
            shapes[p + "self_attn.k_norm.weight"] = (head_dim,)
        else:
            for x in "qkv":
                shapes[p + f"self_attn.{x}_proj.bias"] = (shapes[p + f"self_attn.{x}_proj.weight"][0],)
    if not config.get("tie_word_embeddings", False):
        shapes["lm_head.weight"] = (config["vocab_size"], hidden)
    return shapes


def write_checkpoint(config: Dict[str, Any], folder: Path, dtype: str, seed: int) -> Path:
    """Random weights (N(0, 0.05), norms 1 + N(0, 0.1)) saved with safetensors."""
    import torch
    from safetensors.torch import save_file

    generator = torch.Generator().manual_seed(seed)
    tensors = {}
    for name, shape in sorted(tensor_shapes(config).items()):
        noise = torch.randn(shape, generator=generator)
        tensors[name] = (1.0 + 0.1 * noise) if "norm" in name else 0.05 * noise
    torch_dtype = torch.bfloat16 if dtype == "bfloat16" else torch.float32
    save_file({k: v.to(torch_dtype).contiguous() for k, v in tensors.items()}, str(folder / "model.safetensors"),
              metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps(dict(config, torch_dtype=dtype), indent=2))
    return folder


def _rms_norm(x, weight, eps):
    import torch

    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def _rotate_half(x):
    import torch

    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _swiglu(x, weights: Dict[str, Any], prefix: str):
    import torch

    gate = x @ weights[prefix + "gate_proj.weight"].T
    up = x @ weights[prefix + "up_proj.weight"].T
    return (torch.nn.functional.silu(gate) * up) @ weights[prefix + "down_proj.weight"].T


def _experts(config: Dict[str, Any], weights: Dict[str, Any], prefix: str, h):
    """The mixture of experts of ``h`` ``[B, S, hidden]`` (no shared expert)."""
    import torch

    tokens = h.reshape(-1, h.shape[-1])
    logits = tokens @ weights[prefix + "gate.weight"].T
    probabilities = torch.softmax(logits.float(), dim=-1)
    chosen_weights, chosen = probabilities.topk(config["num_experts_per_tok"], dim=-1)
    if config.get("norm_topk_prob", False):
        chosen_weights = chosen_weights / chosen_weights.sum(-1, keepdim=True)
    out = torch.zeros_like(tokens)
    for expert in range(config["num_experts"]):
        rows, slots = torch.nonzero(chosen == expert, as_tuple=True)
        if len(rows):
            y = _swiglu(tokens[rows], weights, prefix + f"experts.{expert}.")
            out.index_add_(0, rows, y * chosen_weights[rows, slots, None])
    return out.view_as(h)


def forward(config: Dict[str, Any], weights: Dict[str, Any], tokens):
    """Logits ``[B, S, V]`` (float32) of token ids ``[B, S]``."""
    import torch

    hidden, heads = config["hidden_size"], config["num_attention_heads"]
    kv = config.get("num_key_value_heads", heads)
    head_dim = config.get("head_dim") or hidden // heads
    eps, theta = config["rms_norm_eps"], float(config["rope_theta"])
    qwen3 = _qwen3(config)
    batch, seq = tokens.shape
    w = weights
    x = w["model.embed_tokens.weight"][tokens]
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    angles = torch.arange(seq, dtype=torch.float32)[:, None] * inv_freq[None, :]
    cos, sin = torch.cat((angles, angles), -1).cos(), torch.cat((angles, angles), -1).sin()
    mask = torch.full((seq, seq), float("-inf")).triu(1)
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = _rms_norm(x, w[p + "input_layernorm.weight"], eps)
        proj = {}
        for name, count in (("q", heads), ("k", kv), ("v", kv)):
            y = h @ w[p + f"self_attn.{name}_proj.weight"].T
            if not qwen3:
                y = y + w[p + f"self_attn.{name}_proj.bias"]
            y = y.view(batch, seq, count, head_dim)
            if qwen3 and name in "qk":
                y = _rms_norm(y, w[p + f"self_attn.{name}_norm.weight"], eps)
            proj[name] = y.transpose(1, 2)  # [B, heads, S, head_dim]
        q = proj["q"] * cos + _rotate_half(proj["q"]) * sin
        k = proj["k"] * cos + _rotate_half(proj["k"]) * sin
        k = k.repeat_interleave(heads // kv, dim=1)
        v = proj["v"].repeat_interleave(heads // kv, dim=1)
        scores = (q @ k.transpose(2, 3)) * head_dim ** -0.5 + mask
        out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(batch, seq, heads * head_dim)
        x = x + out @ w[p + "self_attn.o_proj.weight"].T
        h = _rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        x = x + (_experts(config, w, p + "mlp.", h) if sparse(config, i) else _swiglu(h, w, p + "mlp."))
    x = _rms_norm(x, w["model.norm.weight"], eps)
    classifier = w.get("lm_head.weight", w["model.embed_tokens.weight"])
    return x @ classifier.T


def logits(folder: Path, tokens: np.ndarray) -> np.ndarray:
    """Logits of the checkpoint in ``folder``, its weights widened to float32."""
    import torch
    from safetensors.torch import load_file

    config = json.loads((folder / "config.json").read_text())
    weights = {k: v.to(torch.float32) for k, v in load_file(str(folder / "model.safetensors")).items()}
    with torch.no_grad():
        return forward(config, weights, torch.from_numpy(tokens).long()).numpy()
