"""The llama2.c model rebuilt as a PyTorch ``nn.Module``, for the torch-mlir path.

Written to export cleanly to ONNX (opset 17) with dynamic batch and sequence
sizes: rotary embedding on (even, odd) pairs with the checkpoint's cos/sin
tables, grouped-query attention by expanding key/value heads, a causal mask
built from position comparisons, SwiGLU, and the (possibly shared) classifier.
"""

import math

import torch
from torch import nn

from .config import Llama2cConfig
from .llama2c import RMS_NORM_EPS, Llama2cCheckpoint


class RMSNorm(nn.Module):
    """``x * rsqrt(mean(x^2) + eps) * weight``."""

    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + RMS_NORM_EPS) * self.weight


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate (even, odd) pairs of ``x: [B, S, H, hs]`` by ``cos/sin: [S, hs/2]``."""
    pairs = x.reshape(x.shape[0], x.shape[1], x.shape[2], -1, 2)
    real, imag = pairs[..., 0], pairs[..., 1]
    cos = cos[None, :, None, :]
    sin = sin[None, :, None, :]
    rotated = torch.stack([real * cos - imag * sin, real * sin + imag * cos], dim=-1)
    return rotated.reshape(x.shape)


class Attention(nn.Module):
    """Causal grouped-query self-attention with rotary embedding."""

    def __init__(self, cfg: Llama2cConfig):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_size = cfg.n_heads, cfg.n_kv_heads, cfg.head_size
        self.wq = nn.Linear(cfg.dim, cfg.dim, bias=False)
        self.wk = nn.Linear(cfg.dim, cfg.kv_dim, bias=False)
        self.wv = nn.Linear(cfg.dim, cfg.kv_dim, bias=False)
        self.wo = nn.Linear(cfg.dim, cfg.dim, bias=False)

    def _repeat_kv(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq = x.shape[0], x.shape[1]
        repeats = self.n_heads // self.n_kv_heads
        expanded = x[:, :, :, None, :].expand(batch, seq, self.n_kv_heads, repeats, self.head_size)
        return expanded.reshape(batch, seq, self.n_heads, self.head_size)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        batch, seq = x.shape[0], x.shape[1]
        q = self.wq(x).reshape(batch, seq, self.n_heads, self.head_size)
        k = self.wk(x).reshape(batch, seq, self.n_kv_heads, self.head_size)
        v = self.wv(x).reshape(batch, seq, self.n_kv_heads, self.head_size)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        k, v = self._repeat_kv(k), self._repeat_kv(v)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_size)
        positions = torch.arange(seq, device=x.device)
        future = positions[None, :] > positions[:, None]
        scores = scores.masked_fill(future, float("-inf"))
        mixed = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.wo(mixed.transpose(1, 2).reshape(batch, seq, -1))


class FeedForward(nn.Module):
    """SwiGLU: ``w2(silu(w1 x) * w3 x)``."""

    def __init__(self, cfg: Llama2cConfig):
        super().__init__()
        self.w1 = nn.Linear(cfg.dim, cfg.hidden_dim, bias=False)
        self.w2 = nn.Linear(cfg.hidden_dim, cfg.dim, bias=False)
        self.w3 = nn.Linear(cfg.dim, cfg.hidden_dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(nn.functional.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    """Pre-norm transformer block."""

    def __init__(self, cfg: Llama2cConfig):
        super().__init__()
        self.attention_norm = RMSNorm(cfg.dim)
        self.attention = Attention(cfg)
        self.ffn_norm = RMSNorm(cfg.dim)
        self.feed_forward = FeedForward(cfg)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x), cos, sin)
        return x + self.feed_forward(self.ffn_norm(x))


class Llama2c(nn.Module):
    """Token ids ``[B, S]`` (int32) to logits ``[B, S, vocab]``.

    Parameter names follow llama2.c's ``model.py`` (``layers.0.attention.wq``
    and so on), so ``state_dict`` keys are the checkpoint's weight names plus
    ``.weight``.
    """

    def __init__(self, cfg: Llama2cConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_embeddings = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.dim)
        self.output = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)
        if cfg.shared_classifier:
            self.output.weight = self.tok_embeddings.weight
        half = cfg.head_size // 2
        self.register_buffer("freq_cis_real", torch.zeros(cfg.seq_len, half), persistent=False)
        self.register_buffer("freq_cis_imag", torch.zeros(cfg.seq_len, half), persistent=False)

    @classmethod
    def from_checkpoint(cls, checkpoint: Llama2cCheckpoint) -> "Llama2c":
        """A module holding ``checkpoint``'s weights."""
        model = cls(checkpoint.config)
        with torch.no_grad():
            for name, array in checkpoint.weights.items():
                if name.startswith("freq_cis"):
                    tensor = model.get_buffer(name)
                else:
                    tensor = model.get_parameter(name + ".weight")
                tensor.copy_(torch.from_numpy(array))
        return model.eval()

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        seq = tokens.shape[1]
        cos, sin = self.freq_cis_real[:seq], self.freq_cis_imag[:seq]
        x = self.tok_embeddings(tokens.long())
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.output(self.norm(x))
