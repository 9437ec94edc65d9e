"""A model's sizes, as every importer describes them (:class:`Llama2cConfig`).

llama2.c's checkpoint header holds exactly these fields; the Hugging Face
readers (:mod:`.architectures`) and the GPTQ checkpoints fill the same
record from ``config.json``, and the emitter builds the module from it.
"""

import dataclasses
from typing import Optional

from ..errors import GPTQError


@dataclasses.dataclass(frozen=True)
class Llama2cConfig:
    """Hyper-parameters from a checkpoint header."""

    dim: int
    hidden_dim: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    vocab_size: int
    seq_len: int
    shared_classifier: bool = True
    #: The width of one attention head when it is not ``dim / n_heads``
    #: (Hugging Face's ``head_dim``: Gemma 2, Qwen 3); None for the default.
    head_dim: Optional[int] = None

    @property
    def head_size(self) -> int:
        """Width of one attention head."""
        return self.head_dim if self.head_dim is not None else self.dim // self.n_heads

    @property
    def q_dim(self) -> int:
        """Width of the query projection and of the attention's output."""
        return self.head_size * self.n_heads

    @property
    def kv_dim(self) -> int:
        """Width of the key and value projections (grouped-query attention)."""
        return self.head_size * self.n_kv_heads

    def validate(self) -> None:
        """Raise GPTQError unless the header describes a well-formed model."""
        fields = dataclasses.asdict(self)
        fields.pop("shared_classifier")
        if self.head_dim is None:
            fields.pop("head_dim")
        for name, value in fields.items():
            if value <= 0:
                raise GPTQError(f"invalid checkpoint header: {name} = {value}, expected > 0")
        if self.head_dim is None and self.dim % self.n_heads:
            raise GPTQError(
                f"invalid checkpoint header: dim {self.dim} is not a multiple of "
                f"n_heads {self.n_heads}"
            )
        if self.n_heads % self.n_kv_heads:
            raise GPTQError(
                f"invalid checkpoint header: n_heads {self.n_heads} is not a multiple "
                f"of n_kv_heads {self.n_kv_heads}"
            )
        if self.head_size % 2:
            raise GPTQError(
                f"invalid checkpoint header: head size {self.head_size} is odd, "
                "rotary embedding needs pairs"
            )
