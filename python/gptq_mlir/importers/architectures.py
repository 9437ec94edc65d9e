"""The decoder-only architectures that ``import-hf`` reads, from config.json.

Every one is a Llama-shaped stack (embedding, blocks of RMS-normalized
(PhiMoE: LayerNorm-normalized) attention with rotary positions and a gated feed-forward layer, a final norm
and a classifier), and :mod:`gptq_mlir.importers.emitter` emits all of them as one
module form with the same weight and layer names. What differs is what
:class:`Architecture` records:

============================  ==================================================
``LlamaForCausalLM``          rotary scaling ``linear``, ``dynamic``, ``llama3``
``MistralForCausalLM``        a sliding attention window on every layer
``Qwen2ForCausalLM``          biases on q, k and v
``Qwen3ForCausalLM``          RMS norms of each q and k head, ``head_dim``
``Phi3ForCausalLM``           fused ``qkv_proj`` and ``gate_up_proj``
``Gemma2ForCausalLM``         ``(1 + w)`` norms, scaled embeddings, norms after
                              attention and feed-forward, tanh GELU, soft caps
                              on attention and final logits,
                              ``query_pre_attn_scalar``, a window on even layers
``MixtralForCausalLM``        a mixture of SwiGLU experts in every layer, the
                              top-k weights renormalized
``Qwen2MoeForCausalLM``       Qwen 2's biases; experts of their own size and a
                              shared expert gated by a sigmoid, in the layers
                              ``mlp_only_layers`` and ``decoder_sparse_step``
                              make sparse (the others dense)
``OlmoeForCausalLM``          RMS norms of the whole q and k projections,
                              ``clip_qkv``; experts in every layer
``Qwen3MoeForCausalLM``       Qwen 3's attention; experts as Qwen 2 MoE's,
                              without a shared expert
``PhimoeForCausalLM``         LayerNorms with biases; biases on q, k, v and o
                              (``attention_bias``) and on the classifier
                              (``lm_head_bias``); ``longrope`` rotary scaling;
                              Mixtral's experts, routed by ``sparsemixer``
                              (also read as ``PhiMoEForCausalLM``, the name
                              Phi-3.5-MoE's config.json gives)
============================  ==================================================

Each field is read as the architecture's transformers 4.46 configuration
class reads it (Qwen 3 MoE's, which 4.46 lacks, as 4.51's), with that
class's default where config.json omits it (so a Mistral config without
``sliding_window`` has the default window of 4096, as transformers gives
it). Settings that the module cannot express are refused
with the field's name: other rotary scalings (``yarn``, ``longrope`` but
for PhiMoE, ...),
``partial_rotary_factor`` below 1, the Qwens' ``use_sliding_window`` (which
transformers 4.46 applies only in flash attention for Qwen 2), biases where
the architecture has none.

Names: our weight names are llama2.c's (``layers.0.attention.wq``), plus
``attention.{bq,bk,bv}`` for Qwen 2's biases, ``attention.{q_norm,k_norm}``
for Qwen 3's head norms (and OLMoE's norms of the whole projections),
``attention.wqkv`` and ``feed_forward.w13`` for Phi-3's fused layers,
``attention_post_norm`` and ``ffn_post_norm`` for Gemma 2's norms after
attention and feed-forward (its ``pre_feedforward_layernorm`` is our
``ffn_norm``), and for a mixture of experts ``feed_forward.gate`` (the
router), ``feed_forward.experts.E.{w1,w2,w3}`` (expert E's gate, down and up
projections) and Qwen 2 MoE's ``feed_forward.shared_expert.{w1,w2,w3}`` and
``feed_forward.shared_expert_gate``; PhiMoE's biases are
``attention.bo`` (o), ``attention_norm_bias``, ``ffn_norm_bias`` and
``norm_bias`` (its LayerNorms') and ``output_bias`` (the classifier's).
:func:`hf_names` maps them to the Hugging Face tensor names.

Rotary embedding: the module rotates interleaved pairs ``(x[2i], x[2i+1])``
of each head, as llama2.c does; Hugging Face rotates the halves ``(x[i],
x[i + head_dim / 2])``. :func:`rotary_rows` is the per-head row permutation
between the two, which the readers undo on every tensor whose rows (or
elements) are q or k features: the q and k projections and their biases,
the q and k parts of Phi-3's fused projection, and the norms of q and k
(Qwen 3's of each head, OLMoE's of the whole projections).
"""

import dataclasses
import math
import re
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import numpy as np

from .. import signals
from ..errors import GPTQError
from ..files import inputs
from .config import Llama2cConfig

#: ``architectures`` value -> our kind, which is also its ``model_type``.
KINDS = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "Phi3ForCausalLM": "phi3",
    "Gemma2ForCausalLM": "gemma2",
    "MixtralForCausalLM": "mixtral",
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "OlmoeForCausalLM": "olmoe",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "PhimoeForCausalLM": "phimoe",
    # Phi-3.5-MoE's config.json names its remote-code class; transformers
    # 4.46 reads it by model_type as PhimoeForCausalLM.
    "PhiMoEForCausalLM": "phimoe",
}

#: Each configuration class's defaults (transformers 4.46; Qwen 3 as its
#: model card and later transformers give them, Qwen 3 MoE as transformers
#: 4.51's Qwen3MoeConfig) for the fields read here.
_DEFAULTS: Dict[str, Dict[str, Any]] = {
    "llama": {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": False,
              "max_position_embeddings": 2048},
    "mistral": {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": False,
                "max_position_embeddings": 4096 * 32, "sliding_window": 4096},
    "qwen2": {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": False,
              "max_position_embeddings": 32768},
    "qwen3": {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": False,
              "max_position_embeddings": 32768, "head_dim": 128},
    "phi3": {"rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": False,
             "max_position_embeddings": 4096, "sliding_window": None},
    "gemma2": {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": True,
               "max_position_embeddings": 8192, "head_dim": 256, "query_pre_attn_scalar": 256,
               "sliding_window": 4096, "final_logit_softcapping": 30.0, "attn_logit_softcapping": 50.0,
               "hidden_activation": "gelu_pytorch_tanh"},
    "mixtral": {"rms_norm_eps": 1e-5, "rope_theta": 1e6, "tie_word_embeddings": False,
                "max_position_embeddings": 4096 * 32, "sliding_window": None, "num_local_experts": 8,
                "num_experts_per_tok": 2},
    "qwen2_moe": {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": False,
                  "max_position_embeddings": 32768, "num_key_value_heads": 16, "num_experts": 60,
                  "num_experts_per_tok": 4, "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
                  "decoder_sparse_step": 1, "mlp_only_layers": None, "norm_topk_prob": False},
    "olmoe": {"rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": False,
              "max_position_embeddings": 4096, "num_experts": 64, "num_experts_per_tok": 8, "norm_topk_prob": False,
              "clip_qkv": None},
    "qwen3_moe": {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": False,
                  "max_position_embeddings": 32768, "num_key_value_heads": 4, "head_dim": None, "num_experts": 128,
                  "num_experts_per_tok": 8, "moe_intermediate_size": 768, "decoder_sparse_step": 1,
                  "mlp_only_layers": None, "norm_topk_prob": False},
    "phimoe": {"rms_norm_eps": 1e-5, "rope_theta": 1e6, "tie_word_embeddings": False,
               "max_position_embeddings": 4096 * 32, "num_key_value_heads": 8, "sliding_window": None,
               "num_local_experts": 16, "num_experts_per_tok": 2, "router_jitter_noise": 0.01,
               "attention_bias": False, "lm_head_bias": False},
}
#: Kinds whose transformers class reads ``head_dim`` (the others compute
#: hidden_size / num_attention_heads and ignore the field).
_HEAD_DIM_KINDS = ("llama", "mistral", "qwen3", "gemma2", "qwen3_moe")
#: Kinds whose rotary embedding follows ``rope_scaling`` (transformers'
#: shared rotary code); the others' classes take no scaling.
_SCALED_KINDS = ("llama", "qwen2", "qwen3", "qwen2_moe", "olmoe", "qwen3_moe")
#: Kinds whose feed-forward layers are mixtures of experts (in some layers).
MOE_KINDS = ("mixtral", "qwen2_moe", "olmoe", "qwen3_moe", "phimoe")
#: The rotary scalings read, by ``rope_type``.
ROPE_TYPES = ("default", "linear", "dynamic", "llama3")

#: The most positions a config may give (max_position_embeddings, and a
#: dynamic scaling's reach): the rotary angles are float32 products of the
#: position, and float32 holds every integer only up to 2**24.
MAX_POSITIONS = 1 << 24
#: The largest vocabulary: the module's token ids are i32.
MAX_VOCAB = (1 << 31) - 1
#: rms_norm_eps must be a normal float32 (the module's type; a subnormal or
#: zero epsilon divides by zero for a row of zeros) and at most 0.1: it is
#: added to a mean of squares near 1, and larger values flatten every
#: activation (1e300 makes all logits zero). Llama uses 1e-5 and 1e-6.
EPS_RANGE = (float(np.finfo(np.float32).tiny), 0.1)
#: rope_theta must exceed 1 (theta ** (2i / d) then falls with i, and 0 or
#: a float32 underflow makes the angles NaN) and be finite in float32.
THETA_RANGE = (1.0, float(np.finfo(np.float32).max))
#: Scaling factors, soft caps and query_pre_attn_scalar: positive and
#: finite in float32, the module's type.
POSITIVE_RANGE = (0.0, float(np.finfo(np.float32).max))


@dataclasses.dataclass(frozen=True)
class DynamicRope:
    """Dynamic NTK scaling: for a sequence of ``seq > max_positions``
    tokens, the rotary base becomes ``theta * (factor * seq / max_positions
    - (factor - 1)) ** (d / (d - 2))`` (d the head size), computed in the
    module for each call as transformers computes it for a fresh model."""

    factor: float
    max_positions: int
    theta: float


@dataclasses.dataclass(frozen=True)
class LongRope:
    """PhiMoE's ``longrope`` scaling as transformers 4.46's
    PhimoeRotaryEmbedding computes it for a call whose last position is
    ``seq - 1`` (a prefill's length, a decode step's position plus one):
    the frequencies ``1 / (factor[i] * theta ** (2i / d))`` with the
    long factors when ``seq >= factor_context`` and ``max_positions >
    factor_context``, else the short ones; the cos and sin times
    ``long_mscale`` when ``seq > mscale_context``, else ``short_mscale``.
    The two contexts are both original_max_position_embeddings, the
    top-level field's (when given) for the factors and rope_scaling's for
    the mscale, as transformers reads them."""

    short_factors: Tuple[float, ...]
    long_factors: Tuple[float, ...]
    short_mscale: float
    long_mscale: float
    factor_context: int
    mscale_context: int
    max_positions: int

    @property
    def reaches_long(self) -> bool:
        """Whether a sequence the module takes can get the long factors."""
        return self.max_positions > self.factor_context

    def frequencies(self, theta: float, head_size: int, long: bool) -> np.ndarray:
        """The short or long frequencies, float32 ``[head_size / 2]``,
        computed with torch in transformers' order of operations (see
        :func:`rope_frequencies`)."""
        with signals.held():
            import torch

            factors = torch.tensor(self.long_factors if long else self.short_factors, dtype=torch.float32)
            exponents = torch.arange(0, head_size, 2, dtype=torch.int64).float() / head_size
            return (1.0 / (factors * theta ** exponents)).numpy().astype(np.float32)


@dataclasses.dataclass(frozen=True)
class Architecture:
    """What the emitter needs to know of a model beyond its sizes.

    ``rope_theta`` and ``rope_scaling`` give the rotary frequencies
    (:meth:`frequencies`), from which the module computes the angles of the
    positions it is given; None for llama2.c checkpoints, whose modules
    read the rotary tables ``freq_cis_real`` and ``freq_cis_imag`` among
    the weights. ``sliding_windows`` has one entry per layer: the window (a
    query attends to the ``window`` latest positions, itself included) or
    None."""

    kind: str = "llama"
    rms_norm_eps: float = 1e-5
    rope_theta: Optional[float] = None
    #: rope_scaling as :func:`_rope_scaling` checked it (None: unscaled).
    rope_scaling: Optional[Dict[str, Any]] = None
    dynamic_rope: Optional[DynamicRope] = None
    long_rope: Optional[LongRope] = None
    sliding_windows: Tuple[Optional[int], ...] = ()
    qkv_bias: bool = False
    #: A bias on the attention's output projection (PhiMoE's attention_bias).
    o_bias: bool = False
    #: A bias on the classifier (PhiMoE's lm_head_bias).
    lm_head_bias: bool = False
    #: The norms of the blocks' inputs and the final norm are LayerNorms
    #: with biases (PhiMoE) instead of RMS norms.
    layer_norm: bool = False
    #: RMS norms of q and k after their projections: over each head
    #: ("head", Qwen 3) or over the whole projection ("projection", OLMoE).
    qk_norm: Optional[str] = None
    #: q, k and v clamped to [-clip_qkv, clip_qkv] after the norms (OLMoE).
    clip_qkv: Optional[float] = None
    fused: bool = False
    #: RMS norms multiply by ``1 + weight`` (Gemma).
    norm_offset: bool = False
    #: Embeddings multiplied by this (Gemma: sqrt(hidden_size)).
    embed_scale: Optional[float] = None
    #: Norms of the attention's and the feed-forward layer's outputs (Gemma 2).
    post_norms: bool = False
    #: "silu" (SwiGLU) or "gelu_tanh" (GeGLU with the tanh approximation).
    activation: str = "silu"
    #: Attention scores are multiplied by this: head_size ** -0.5, or Gemma
    #: 2's query_pre_attn_scalar ** -0.5.
    query_scale: Optional[float] = None
    attn_softcap: Optional[float] = None
    final_softcap: Optional[float] = None
    #: Mixture of experts: the feed-forward layer is ``experts`` SwiGLU
    #: experts, ``experts_per_token`` of which a router picks for each
    #: token (softmax over all experts, top-k); 0 for a dense feed-forward
    #: layer.
    experts: int = 0
    experts_per_token: int = 0
    #: The top-k weights are renormalized to sum to 1 (Mixtral; the others'
    #: ``norm_topk_prob``), else the softmax probabilities over all experts
    #: as they are.
    norm_topk: bool = True
    #: Each expert's hidden size (``moe_intermediate_size``); None: the
    #: model's ``hidden_dim``.
    expert_hidden_dim: Optional[int] = None
    #: The hidden size of an expert that every token goes through (Qwen 2
    #: MoE's shared expert), its output multiplied by the sigmoid of
    #: ``shared_expert_gate`` applied to the token; 0: none.
    shared_expert_hidden_dim: int = 0
    #: The layers of a mixture of experts whose feed-forward layer is dense
    #: (of ``hidden_dim``): Qwen MoE's ``mlp_only_layers`` and those
    #: ``decoder_sparse_step`` skips.
    dense_layers: Tuple[int, ...] = ()
    #: How the router weighs the experts it picks: "softmax" (above) or
    #: "sparsemixer" (PhiMoE's top 2: each expert's weight is its softmax
    #: probability among the logits within ``2 * router_jitter`` (relative)
    #: of its own, the first expert's excluded for the second).
    router: str = "softmax"
    router_jitter: float = 0.0
    #: Hugging Face's module of the experts: "block_sparse_moe" (Mixtral:
    #: ``experts.E.{w1,w2,w3}``) or "mlp" (``experts.E.{gate,down,up}_proj``).
    moe_module: str = "block_sparse_moe"

    def window(self, layer: int) -> Optional[int]:
        return self.sliding_windows[layer] if layer < len(self.sliding_windows) else None

    def sparse(self, layer: int) -> bool:
        """Whether layer ``layer``'s feed-forward layer is a mixture of experts."""
        return self.experts > 0 and layer not in self.dense_layers

    def frequencies(self, head_size: int) -> np.ndarray:
        """The rotary frequencies, float32 ``[head_size / 2]`` (computed
        when the module is built: the head size has been checked against
        the tensors by then, and a config cannot make this allocate); with
        ``long_rope``, the short ones."""
        if self.long_rope is not None:
            return self.long_rope.frequencies(self.rope_theta, head_size, long=False)
        return rope_frequencies(self.rope_theta, head_size, self.rope_scaling)


def describe_field(value: Any) -> str:
    return repr(value) if len(repr(value)) < 80 else inputs.describe(value)


def _int(config: Dict[str, Any], key: str, path: Path, default: Any = None, maximum: Optional[int] = None) -> int:
    value = config.get(key, default)
    if value is None:
        raise GPTQError(f"{path}: missing field {key}")
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise GPTQError(f"{path}: field {key} is {inputs.describe(value)}, expected a positive integer")
    if maximum is not None and value > maximum:
        raise GPTQError(f"{path}: field {key} is {value}, expected an integer in [1, {maximum}]")
    return value


def _number(value: Any, key: str, path: Path, bounds: Tuple[float, float], open_below: bool) -> float:
    """A number within ``bounds`` (the lower one excluded when ``open_below``)."""
    low, high = bounds
    interval = f"{'(' if open_below else '['}{low:g}, {high:g}]"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise GPTQError(f"{path}: field {key} is {inputs.describe(value)}, expected a number in {interval}")
    number = float(value) if not isinstance(value, int) or abs(value) < 2**1000 else math.inf
    if not (low < number if open_below else low <= number) or not number <= high:
        raise GPTQError(f"{path}: field {key} is {inputs.describe(value)}, expected a number in {interval}")
    return number


def _optional_number(config: Dict[str, Any], key: str, path: Path, defaults: Dict[str, Any]) -> Optional[float]:
    value = config.get(key, defaults.get(key))
    return None if value is None else _number(value, key, path, POSITIVE_RANGE, open_below=True)


def _window(config: Dict[str, Any], key: str, path: Path, defaults: Dict[str, Any]) -> Optional[int]:
    value = config.get(key, defaults.get(key))
    return None if value is None else _int({key: value}, key, path)


def _unsupported(config: Dict[str, Any], path: Path, checks: Dict[str, Any]) -> None:
    """Refuse each field of ``checks`` whose value is present and fails it."""
    for key, supported in checks.items():
        if key in config and not supported(config[key]):
            raise GPTQError(f"{path}: unsupported {key} = {inputs.describe(config[key])}")


def _scaling_field(config: Dict[str, Any], path: Path) -> Tuple[Optional[Dict[str, Any]], Any]:
    """config.json's rope_scaling (None when absent or null, else an object)
    and its ``rope_type`` (or the older ``type``)."""
    scaling = config.get("rope_scaling")
    if scaling is None:
        return None, None
    if not isinstance(scaling, dict):
        raise GPTQError(f"{path}: field rope_scaling is {inputs.describe(scaling)}, expected an object or null")
    return scaling, scaling.get("rope_type", scaling.get("type"))


def _rope_scaling(config: Dict[str, Any], path: Path, kind: str) -> Optional[Dict[str, Any]]:
    """config.json's rope_scaling, checked: None, or a dict with its
    ``rope_type`` (or the older ``type``) among ``ROPE_TYPES``."""
    scaling, rope_type = _scaling_field(config, path)
    if scaling is None:
        return None
    if kind not in _SCALED_KINDS:
        raise GPTQError(
            f"{path}: unsupported rope_scaling with rope_type {describe_field(rope_type)}: "
            f"{config['architectures'][0]} takes no rotary scaling in transformers 4.46"
        )
    if rope_type not in ROPE_TYPES:
        raise GPTQError(
            f"{path}: unsupported rope_scaling.rope_type = {describe_field(rope_type)} "
            f"(supported: {', '.join(ROPE_TYPES[1:])})"
        )
    if rope_type == "default":
        return None
    checked: Dict[str, Any] = {"rope_type": rope_type}
    checked["factor"] = _number(scaling.get("factor"), "rope_scaling.factor", path,
                                (1.0, POSITIVE_RANGE[1]), open_below=False)
    if rope_type == "llama3":
        for key in ("low_freq_factor", "high_freq_factor"):
            checked[key] = _number(scaling.get(key), f"rope_scaling.{key}", path, POSITIVE_RANGE, open_below=True)
        if not checked["low_freq_factor"] < checked["high_freq_factor"]:
            raise GPTQError(
                f"{path}: field rope_scaling.low_freq_factor {checked['low_freq_factor']:g} must be less "
                f"than high_freq_factor {checked['high_freq_factor']:g}"
            )
        checked["original_max_position_embeddings"] = _int(
            scaling, "original_max_position_embeddings", path, maximum=MAX_POSITIONS
        )
    return checked


def _long_rope(config: Dict[str, Any], path: Path, head_size: int, max_positions: int) -> Optional[LongRope]:
    """PhiMoE's rope_scaling, checked: None, or ``longrope`` with
    ``short_factor`` and ``long_factor`` (``head_size / 2`` positive numbers
    each), ``short_mscale``, ``long_mscale`` and
    ``original_max_position_embeddings``, which transformers 4.46's
    PhimoeRotaryEmbedding reads (it ignores ``factor`` and
    ``attention_factor``: the mscales take their place)."""
    scaling, rope_type = _scaling_field(config, path)
    if scaling is None:
        return None
    if rope_type != "longrope":
        raise GPTQError(f"{path}: unsupported rope_scaling.rope_type = {describe_field(rope_type)} "
                        f"({config['architectures'][0]} takes longrope)")
    factors = {}
    for key in ("short_factor", "long_factor"):
        value = scaling.get(key)
        if not isinstance(value, list) or len(value) != head_size // 2:
            raise GPTQError(f"{path}: field rope_scaling.{key} is {describe_field(value)}, expected a list of "
                            f"head_dim / 2 = {head_size // 2} numbers")
        factors[key] = tuple(_number(x, f"rope_scaling.{key}", path, POSITIVE_RANGE, open_below=True) for x in value)
    mscales = [_number(scaling.get(key), f"rope_scaling.{key}", path, POSITIVE_RANGE, open_below=True)
               for key in ("short_mscale", "long_mscale")]
    key = "rope_scaling.original_max_position_embeddings"
    context = _int({key: scaling.get("original_max_position_embeddings")}, key, path, maximum=MAX_POSITIONS)
    # transformers' configuration sets the top-level field over
    # rope_scaling's, and its factors follow it; its mscale follows
    # rope_scaling's.
    factor_context = _int(config, "original_max_position_embeddings", path, context, maximum=MAX_POSITIONS)
    return LongRope(factors["short_factor"], factors["long_factor"], mscales[0], mscales[1], factor_context,
                    context, max_positions)


def rope_frequencies(theta: float, head_size: int, scaling: Optional[Dict[str, Any]]) -> np.ndarray:
    """The rotary frequencies ``1 / theta ** (2i / d)``, scaled, in float32.

    Computed with torch in the order of operations of transformers' rotary
    initialization, so that they are its float32 values bit for bit (NumPy's
    float32 ``**`` rounds some differently, and a frequency one ulp off
    moves the angle at position 2048 by 1e-4 radians).

    The ending signals are held back meanwhile: one that raises inside
    torch's import or a torch call, which runs Python code from C++, ends
    as a RuntimeError or as an uncaught C++ exception that aborts the
    process (leaving its temporaries behind); torch's part takes about a
    second once."""
    with signals.held():
        return _rope_frequencies(theta, head_size, scaling)


def _rope_frequencies(theta: float, head_size: int, scaling: Optional[Dict[str, Any]]) -> np.ndarray:
    import torch

    inv_freq = 1.0 / (theta ** (torch.arange(0, head_size, 2, dtype=torch.int64).float() / head_size))
    rope_type = scaling["rope_type"] if scaling else "default"
    if rope_type == "linear":
        inv_freq = inv_freq / scaling["factor"]
    elif rope_type == "llama3":
        # Llama 3.1's scaling: wavelengths longer than the original context
        # over low_freq_factor are divided by factor, those shorter than it
        # over high_freq_factor kept, and those between interpolated.
        factor = scaling["factor"]
        low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
        context = scaling["original_max_position_embeddings"]
        low_wavelen, high_wavelen = context / low, context / high
        wavelen = 2 * math.pi / inv_freq
        scaled = torch.where(wavelen > low_wavelen, inv_freq / factor, inv_freq)
        smooth = (context / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
        inv_freq = torch.where(medium, smoothed, scaled)
    return inv_freq.numpy().astype(np.float32)


def parse(config: Any, path: Path) -> Tuple[Llama2cConfig, Architecture]:
    """(sizes, architecture) of a parsed config.json; GPTQError naming the
    field for another architecture or a setting the module cannot express."""
    if not isinstance(config, dict):
        raise GPTQError(f"{path}: expected a JSON object")
    architectures = config.get("architectures")
    if not (isinstance(architectures, list) and len(architectures) == 1 and isinstance(architectures[0], str)
            and architectures[0] in KINDS):
        raise GPTQError(
            f"{path}: architectures is {describe_field(architectures)}, expected one of "
            f"{', '.join(repr([name]) for name in KINDS)}"
        )
    kind = KINDS[architectures[0]]
    model_type = config.get("model_type", kind)
    if model_type != kind:
        raise GPTQError(f"{path}: model_type is {inputs.describe(model_type)}, expected \"{kind}\"")
    if "quantization_config" in config:
        raise GPTQError(f"{path}: field quantization_config: a quantized checkpoint (read it with import-gptq)")
    defaults = _DEFAULTS[kind]
    _unsupported(config, path, {
        # Qwen 2's and Qwen 2 MoE's classes give q, k and v biases whatever
        # the field says; PhiMoE's follows it (read below).
        "attention_bias": lambda v: v is False or (kind in ("qwen2", "qwen2_moe", "phimoe") and v is True),
        "mlp_bias": lambda v: v is False,
        "partial_rotary_factor": lambda v: v == 1 and not isinstance(v, bool),
        "use_sliding_window": lambda v: v is False,
    })
    if kind == "gemma2":
        activation = config.get("hidden_activation", defaults["hidden_activation"])
        if activation not in ("gelu_pytorch_tanh", "gelu_tanh"):
            raise GPTQError(f"{path}: unsupported hidden_activation = {inputs.describe(activation)}, "
                            "expected \"gelu_pytorch_tanh\"")
    elif "hidden_act" in config and config["hidden_act"] != "silu":
        raise GPTQError(f"{path}: unsupported hidden_act = {inputs.describe(config['hidden_act'])}")
    tie = config.get("tie_word_embeddings", defaults["tie_word_embeddings"])
    if not isinstance(tie, bool):
        raise GPTQError(f"{path}: field tie_word_embeddings is {inputs.describe(tie)}, expected true or false")

    heads = _int(config, "num_attention_heads", path)
    dim = _int(config, "hidden_size", path)
    head_dim = None
    if kind in _HEAD_DIM_KINDS:
        given = config.get("head_dim", defaults.get("head_dim"))
        if given is not None:
            head_dim = _int({"head_dim": given}, "head_dim", path)
            if head_dim * heads == dim:
                head_dim = None  # the default, which the module need not state
    elif config.get("head_dim") is not None and (type(config["head_dim"]) is not int
                                                 or config["head_dim"] * heads != dim):
        raise GPTQError(
            f"{path}: unsupported head_dim = {inputs.describe(config['head_dim'])}: {architectures[0]} "
            f"uses hidden_size / num_attention_heads = {dim // heads}"
        )
    max_positions = _int(config, "max_position_embeddings", path, defaults["max_position_embeddings"],
                         maximum=MAX_POSITIONS)
    # PhiMoE's rotary embedding reads its own scaling (_long_rope).
    scaling = _rope_scaling(config, path, kind) if kind != "phimoe" else None
    seq_len = max_positions
    if scaling and scaling["rope_type"] == "dynamic":
        # Dynamic scaling exists to reach past max_position_embeddings: the
        # module takes sequences up to factor times as long.
        seq_len = min(MAX_POSITIONS, int(scaling["factor"] * max_positions))
    cfg = Llama2cConfig(
        dim=dim,
        hidden_dim=_int(config, "intermediate_size", path),
        n_layers=_int(config, "num_hidden_layers", path),
        n_heads=heads,
        n_kv_heads=_int(config, "num_key_value_heads", path, defaults.get("num_key_value_heads") or heads),
        vocab_size=_int(config, "vocab_size", path, maximum=MAX_VOCAB),
        seq_len=seq_len,
        shared_classifier=tie,
        head_dim=head_dim,
    )
    try:
        cfg.validate()
    except GPTQError as error:
        raise GPTQError(f"{path}: {str(error).replace('invalid checkpoint header', 'config')}") from None

    eps = _number(config.get("rms_norm_eps", defaults["rms_norm_eps"]), "rms_norm_eps", path, EPS_RANGE,
                  open_below=False)
    theta = _number(config.get("rope_theta", defaults["rope_theta"]), "rope_theta", path, THETA_RANGE,
                    open_below=True)
    dynamic = None
    if scaling and scaling["rope_type"] == "dynamic":
        dynamic = DynamicRope(scaling["factor"], max_positions, theta)
    fields: Dict[str, Any] = dict(
        kind=kind,
        rms_norm_eps=eps,
        rope_theta=theta,
        rope_scaling=scaling,
        dynamic_rope=dynamic,
        query_scale=1.0 / math.sqrt(cfg.head_size),
    )
    if kind in ("mistral", "phi3", "mixtral", "phimoe"):
        fields["sliding_windows"] = (_window(config, "sliding_window", path, defaults),) * cfg.n_layers
    if kind in MOE_KINDS:
        fields.update(_experts(config, path, kind, defaults, cfg.n_layers))
    if kind in ("qwen2", "qwen2_moe"):
        fields["qkv_bias"] = True
    elif kind in ("qwen3", "qwen3_moe"):
        fields["qk_norm"] = "head"
    elif kind == "olmoe":
        fields["qk_norm"] = "projection"
        fields["clip_qkv"] = _optional_number(config, "clip_qkv", path, defaults)
    if kind == "phi3":
        fields["fused"] = True
    if kind == "phimoe":
        bias = _flag(config, "attention_bias", path, defaults)
        fields.update(
            qkv_bias=bias,
            o_bias=bias,
            lm_head_bias=_flag(config, "lm_head_bias", path, defaults),
            layer_norm=True,
            long_rope=_long_rope(config, path, cfg.head_size, max_positions),
        )
    if kind == "gemma2":
        window = _window(config, "sliding_window", path, defaults)
        scalar = _number(config.get("query_pre_attn_scalar", defaults["query_pre_attn_scalar"]),
                         "query_pre_attn_scalar", path, POSITIVE_RANGE, open_below=True)
        fields.update(
            sliding_windows=tuple(window if layer % 2 == 0 else None for layer in range(cfg.n_layers)),
            norm_offset=True,
            embed_scale=dim ** 0.5,
            post_norms=True,
            activation="gelu_tanh",
            query_scale=scalar ** -0.5,
            attn_softcap=_optional_number(config, "attn_logit_softcapping", path, defaults),
            final_softcap=_optional_number(config, "final_logit_softcapping", path, defaults),
        )
    return cfg, Architecture(**fields)


#: The most experts a mixture may have.
MAX_EXPERTS = 4096


def _flag(config: Dict[str, Any], key: str, path: Path, defaults: Dict[str, Any]) -> bool:
    value = config.get(key, defaults[key])
    if not isinstance(value, bool):
        raise GPTQError(f"{path}: field {key} is {inputs.describe(value)}, expected true or false")
    return value


def _experts(config: Dict[str, Any], path: Path, kind: str, defaults: Dict[str, Any], layers: int) -> Dict[str, Any]:
    """The :class:`Architecture` fields of a mixture of experts."""
    if kind in ("mixtral", "phimoe"):
        experts = _int(config, "num_local_experts", path, defaults["num_local_experts"], maximum=MAX_EXPERTS)
        per_token = _int(config, "num_experts_per_tok", path, defaults["num_experts_per_tok"], maximum=experts)
        if kind == "mixtral":
            return dict(experts=experts, experts_per_token=per_token)
        if per_token != 2:
            raise GPTQError(f"{path}: unsupported num_experts_per_tok = {per_token}: {config['architectures'][0]}'s "
                            "sparsemixer routes each token to 2 experts")
        # The jitter is the routing's threshold in inference (the noise of
        # its name, and input_jitter_noise, act in training only).
        jitter = _number(config.get("router_jitter_noise", defaults["router_jitter_noise"]), "router_jitter_noise",
                         path, (0.0, POSITIVE_RANGE[1]), open_below=False)
        return dict(experts=experts, experts_per_token=per_token, router="sparsemixer", router_jitter=jitter)
    experts = _int(config, "num_experts", path, defaults["num_experts"], maximum=MAX_EXPERTS)
    fields: Dict[str, Any] = dict(
        experts=experts,
        experts_per_token=_int(config, "num_experts_per_tok", path, defaults["num_experts_per_tok"],
                               maximum=experts),
        norm_topk=_flag(config, "norm_topk_prob", path, defaults),
        moe_module="mlp",
    )
    if kind == "olmoe":
        return fields  # every layer sparse, each expert of intermediate_size
    fields["expert_hidden_dim"] = _int(config, "moe_intermediate_size", path, defaults["moe_intermediate_size"])
    if kind == "qwen2_moe":
        fields["shared_expert_hidden_dim"] = _int(config, "shared_expert_intermediate_size", path,
                                                  defaults["shared_expert_intermediate_size"])
    # transformers' rule: layer i is sparse unless mlp_only_layers lists it
    # or (i + 1) is not a multiple of decoder_sparse_step.
    step = _int(config, "decoder_sparse_step", path, defaults["decoder_sparse_step"])
    dense = config.get("mlp_only_layers", defaults["mlp_only_layers"])
    if dense is None:
        dense = []
    if not (isinstance(dense, list) and all(type(layer) is int for layer in dense)):
        raise GPTQError(f"{path}: field mlp_only_layers is {describe_field(dense)}, expected a list of layer indices")
    fields["dense_layers"] = tuple(layer for layer in range(layers) if layer in dense or (layer + 1) % step != 0)
    return fields


#: Our per-layer weight names -> Hugging Face's, within layer ``i``, for
#: every kind (then the additions of some).
_LAYER_NAMES = {
    "attention_norm": "input_layernorm.weight",
    "ffn_norm": "post_attention_layernorm.weight",
    "attention.wq": "self_attn.q_proj.weight",
    "attention.wk": "self_attn.k_proj.weight",
    "attention.wv": "self_attn.v_proj.weight",
    "attention.wo": "self_attn.o_proj.weight",
    "feed_forward.w1": "mlp.gate_proj.weight",
    "feed_forward.w2": "mlp.down_proj.weight",
    "feed_forward.w3": "mlp.up_proj.weight",
}


#: Our names of a SwiGLU's projections -> those of Hugging Face's ``mlp``.
_PROJECTIONS = {"w1": "gate_proj", "w2": "down_proj", "w3": "up_proj"}


def layer_names(arch: Architecture, layer: int = 0) -> Dict[str, str]:
    """Our names of layer ``layer``'s weights -> Hugging Face's, for ``arch``."""
    names = dict(_LAYER_NAMES)
    if arch.qkv_bias:
        names.update({f"attention.b{x}": f"self_attn.{x}_proj.bias" for x in "qkv"})
    if arch.o_bias:
        names["attention.bo"] = "self_attn.o_proj.bias"
    if arch.layer_norm:
        names["attention_norm_bias"] = "input_layernorm.bias"
        names["ffn_norm_bias"] = "post_attention_layernorm.bias"
    if arch.qk_norm:
        names.update({f"attention.{x}_norm": f"self_attn.{x}_norm.weight" for x in "qk"})
    if arch.fused:
        for ours in ("attention.wq", "attention.wk", "attention.wv", "feed_forward.w1", "feed_forward.w3"):
            del names[ours]
        names["attention.wqkv"] = "self_attn.qkv_proj.weight"
        names["feed_forward.w13"] = "mlp.gate_up_proj.weight"
    if arch.post_norms:
        names.update({
            "attention_post_norm": "post_attention_layernorm.weight",
            "ffn_norm": "pre_feedforward_layernorm.weight",
            "ffn_post_norm": "post_feedforward_layernorm.weight",
        })
    if arch.sparse(layer):
        for ours in ("feed_forward.w1", "feed_forward.w2", "feed_forward.w3"):
            del names[ours]
        module = arch.moe_module
        projections = {w: w for w in _PROJECTIONS} if module == "block_sparse_moe" else _PROJECTIONS
        names["feed_forward.gate"] = f"{module}.gate.weight"
        for expert in range(arch.experts):
            for ours, theirs in projections.items():
                names[f"feed_forward.experts.{expert}.{ours}"] = f"{module}.experts.{expert}.{theirs}.weight"
        if arch.shared_expert_hidden_dim:
            for ours, theirs in _PROJECTIONS.items():
                names[f"feed_forward.shared_expert.{ours}"] = f"mlp.shared_expert.{theirs}.weight"
            names["feed_forward.shared_expert_gate"] = "mlp.shared_expert_gate.weight"
    return names


def hf_names(n_layers: int, shared_classifier: bool, arch: Architecture = Architecture()) -> Dict[str, str]:
    """Hugging Face's tensor name for each of our weight names (and
    ``output``, the classifier, whose weight is ``lm_head.weight`` when
    untied; its bias ``output_bias``, tied or not)."""
    names = {"tok_embeddings": "model.embed_tokens.weight", "norm": "model.norm.weight"}
    if arch.layer_norm:
        names["norm_bias"] = "model.norm.bias"
    for layer in range(n_layers):
        for ours, theirs in layer_names(arch, layer).items():
            names[f"layers.{layer}.{ours}"] = f"model.layers.{layer}.{theirs}"
    if not shared_classifier:
        names["output"] = "lm_head.weight"
    if arch.lm_head_bias:
        names["output_bias"] = "lm_head.bias"
    return names


_EXPERT_WEIGHT = re.compile(r"feed_forward\.(experts\.(?:0|[1-9][0-9]{0,8})|shared_expert)\.(w[123])")


def _per_layer_shape(cfg: Llama2cConfig, suffix: str, arch: Architecture) -> Optional[Tuple[int, ...]]:
    """The shape of weight ``suffix`` (our name without ``layers.N.``) of a
    layer of ``arch``: those of :func:`_per_layer_shapes`, and an expert's
    (``feed_forward.experts.E.w1``, ``feed_forward.shared_expert.w1``: each
    a SwiGLU of its hidden size)."""
    match = _EXPERT_WEIGHT.fullmatch(suffix)
    if match is not None:
        if match.group(1) == "shared_expert":
            hidden = arch.shared_expert_hidden_dim
            if not hidden:
                return None
        else:
            hidden = arch.expert_hidden_dim or cfg.hidden_dim
        return (cfg.dim, hidden) if match.group(2) == "w2" else (hidden, cfg.dim)
    return _per_layer_shapes(cfg, arch).get(suffix)


def _per_layer_shapes(cfg: Llama2cConfig, arch: Architecture) -> Dict[str, Tuple[int, ...]]:
    """The shape of each weight a layer of ``arch`` may have, by our name
    without ``layers.N.`` (an expert's: :func:`_per_layer_shape`)."""
    norms = (cfg.q_dim, cfg.kv_dim) if arch.qk_norm == "projection" else (cfg.head_size, cfg.head_size)
    shapes = {
        "attention_norm": (cfg.dim,),
        "ffn_norm": (cfg.dim,),
        "attention_norm_bias": (cfg.dim,),
        "ffn_norm_bias": (cfg.dim,),
        "attention_post_norm": (cfg.dim,),
        "ffn_post_norm": (cfg.dim,),
        "attention.wq": (cfg.q_dim, cfg.dim),
        "attention.wk": (cfg.kv_dim, cfg.dim),
        "attention.wv": (cfg.kv_dim, cfg.dim),
        "attention.wqkv": (cfg.q_dim + 2 * cfg.kv_dim, cfg.dim),
        "attention.wo": (cfg.dim, cfg.q_dim),
        "attention.bq": (cfg.q_dim,),
        "attention.bk": (cfg.kv_dim,),
        "attention.bv": (cfg.kv_dim,),
        "attention.bo": (cfg.dim,),
        "attention.q_norm": norms[:1],
        "attention.k_norm": norms[1:],
        "feed_forward.w1": (cfg.hidden_dim, cfg.dim),
        "feed_forward.w3": (cfg.hidden_dim, cfg.dim),
        "feed_forward.w13": (2 * cfg.hidden_dim, cfg.dim),
        "feed_forward.w2": (cfg.dim, cfg.hidden_dim),
    }
    if arch.experts:
        shapes["feed_forward.gate"] = (arch.experts, cfg.dim)
    if arch.shared_expert_hidden_dim:
        shapes["feed_forward.shared_expert_gate"] = (1, cfg.dim)
    return shapes


def _model_shapes(cfg: Llama2cConfig) -> Dict[str, Tuple[int, ...]]:
    return {"tok_embeddings": (cfg.vocab_size, cfg.dim), "norm": (cfg.dim,), "norm_bias": (cfg.dim,),
            "output": (cfg.vocab_size, cfg.dim), "output_bias": (cfg.vocab_size,)}


def weight_shapes(cfg: Llama2cConfig, arch: Architecture = Architecture()) -> Dict[str, Tuple[int, ...]]:
    """The shape of each of our weights, by name."""
    shapes = _model_shapes(cfg)
    for layer in range(cfg.n_layers):
        for suffix in layer_names(arch, layer):
            shapes[f"layers.{layer}.{suffix}"] = _per_layer_shape(cfg, suffix, arch)
    return shapes


_LAYER_WEIGHT = re.compile(r"layers\.(0|[1-9][0-9]{0,17})\.(.+)")


def weight_shape(cfg: Llama2cConfig, name: str, arch: Architecture = Architecture()) -> Optional[Tuple[int, ...]]:
    """The shape the sizes ``cfg`` and ``arch`` (an expert's size, the
    router's experts) give our weight ``name``; None for a name that is no
    weight of a model of ``cfg.n_layers`` layers."""
    match = _LAYER_WEIGHT.fullmatch(name)
    if match is None:
        return _model_shapes(cfg).get(name)
    if int(match.group(1)) >= cfg.n_layers:
        return None
    return _per_layer_shape(cfg, match.group(2), arch)


def hf_rows(n_heads: int, head_size: int) -> np.ndarray:
    """The row permutation of Hugging Face's q/k conversion: ``w_hf = w[rows]``.

    Hugging Face's ``w.view(n_heads, head_size // 2, 2, dim).transpose(1, 2)``:
    row ``h * head_size + t * head_size / 2 + i`` of the converted weight is
    row ``h * head_size + 2 * i + t`` of llama2.c's (``t`` in {0, 1}).
    ``np.argsort`` of it is the inverse."""
    half = head_size // 2
    rows = np.arange(n_heads * head_size).reshape(n_heads, half, 2)
    return rows.transpose(0, 2, 1).reshape(-1)


_ROTARY_NAME = re.compile(r"\.attention\.(wq|bq|wk|bk|wqkv|q_norm|k_norm)$")


def rotary_rows(cfg: Llama2cConfig, weight_name: str, arch: Architecture = Architecture()) -> Optional[np.ndarray]:
    """:func:`hf_rows` for a weight whose rows are q or k features (by our
    name), else None: ``theirs = ours[rows]``, ``ours = theirs[argsort(rows)]``.
    A norm of q or k is one head's (Qwen 3) or, with ``arch``'s norms of
    the whole projections (OLMoE), all heads'."""
    match = _ROTARY_NAME.search(weight_name)
    if match is None:
        return None
    which = match.group(1)
    if which in ("wq", "bq") or (which == "q_norm" and arch.qk_norm == "projection"):
        return hf_rows(cfg.n_heads, cfg.head_size)
    if which in ("wk", "bk") or (which == "k_norm" and arch.qk_norm == "projection"):
        return hf_rows(cfg.n_kv_heads, cfg.head_size)
    if which in ("q_norm", "k_norm"):
        return hf_rows(1, cfg.head_size)
    return np.concatenate([
        hf_rows(cfg.n_heads, cfg.head_size),
        cfg.q_dim + hf_rows(cfg.n_kv_heads, cfg.head_size),
        cfg.q_dim + cfg.kv_dim + np.arange(cfg.kv_dim),
    ])
