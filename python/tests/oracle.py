"""An independent PyTorch forward pass of the llama2.c model: the tests' oracle.

Written from llama2.c's ``model.py`` (complex-free rotary on (even, odd) pairs,
``repeat_kv`` for grouped-query attention, causal mask, SwiGLU), it shares no
code with the importer. It exists only to check what ``gptq-run`` computes.
"""

import math

import numpy as np
import torch


def _rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def _rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x: [B, S, H, hs]; cos/sin: [S, hs/2]."""
    pairs = x.reshape(*x.shape[:-1], -1, 2)
    re, im = pairs[..., 0], pairs[..., 1]
    cos = cos[None, :, None, :]
    sin = sin[None, :, None, :]
    out = torch.stack([re * cos - im * sin, re * sin + im * cos], dim=-1)
    return out.flatten(3)


def forward(checkpoint, tokens: np.ndarray) -> np.ndarray:
    """Logits ``[B, S, vocab]`` (float32) for ``tokens`` ``[B, S]``."""
    cfg = checkpoint.config
    w = {name: torch.from_numpy(np.array(a)) for name, a in checkpoint.weights.items()}
    tokens = torch.from_numpy(np.asarray(tokens, dtype=np.int64))
    batch, seq = tokens.shape
    hs = cfg.head_size
    rep = cfg.n_heads // cfg.n_kv_heads
    cos = w["freq_cis_real"][:seq]
    sin = w["freq_cis_imag"][:seq]
    mask = torch.full((seq, seq), float("-inf")).triu(1)
    with torch.no_grad():
        x = w["tok_embeddings"][tokens]
        for i in range(cfg.n_layers):
            p = f"layers.{i}."
            xb = _rmsnorm(x, w[p + "attention_norm"])
            q = (xb @ w[p + "attention.wq"].T).view(batch, seq, cfg.n_heads, hs)
            k = (xb @ w[p + "attention.wk"].T).view(batch, seq, cfg.n_kv_heads, hs)
            v = (xb @ w[p + "attention.wv"].T).view(batch, seq, cfg.n_kv_heads, hs)
            q, k = _rotary(q, cos, sin), _rotary(k, cos, sin)
            k = k.repeat_interleave(rep, dim=2)
            v = v.repeat_interleave(rep, dim=2)
            q, k, v = (t.transpose(1, 2) for t in (q, k, v))
            scores = q @ k.transpose(2, 3) / math.sqrt(hs) + mask
            attn = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(batch, seq, cfg.dim)
            x = x + attn @ w[p + "attention.wo"].T
            xb = _rmsnorm(x, w[p + "ffn_norm"])
            gate = torch.nn.functional.silu(xb @ w[p + "feed_forward.w1"].T)
            x = x + (gate * (xb @ w[p + "feed_forward.w3"].T)) @ w[p + "feed_forward.w2"].T
        x = _rmsnorm(x, w["norm"])
        classifier = w["tok_embeddings" if cfg.shared_classifier else "output"]
        return (x @ classifier.T).numpy()


def perplexity(checkpoint, windows: np.ndarray, batch: int = 16) -> float:
    """exp(mean NLL of predicting tokens 1..L-1 of each window) via :func:`forward`."""
    total, count = 0.0, 0
    for start in range(0, len(windows), batch):
        chunk = windows[start : start + batch]
        logits = torch.from_numpy(forward(checkpoint, chunk)).double()
        logp = torch.log_softmax(logits[:, :-1], dim=-1)
        target = torch.from_numpy(chunk[:, 1:].astype(np.int64))
        total -= logp.gather(-1, target[..., None]).sum().item()
        count += target.numel()
    return math.exp(total / count)
