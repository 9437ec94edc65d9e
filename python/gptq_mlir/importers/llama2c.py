"""Reader for llama2.c checkpoints (the legacy format and version 1).

Two layouts exist, both little-endian float32 after a header:

* legacy: 7 x int32 ``dim, hidden_dim, n_layers, n_heads, n_kv_heads,
  vocab_size, seq_len``; a negative ``vocab_size`` means an untied classifier
  is stored at the end of the file. Weights: ``tok_embeddings``,
  ``attention_norm`` (all layers), ``wq``, ``wk``, ``wv``, ``wo``, ``ffn_norm``,
  ``w1``, ``w2``, ``w3``, ``norm``, ``freq_cis_real``, ``freq_cis_imag``
  (``[seq_len, head_size / 2]`` each), then the classifier if untied.
* version 1 (llama2.c ``export.py``, ``version1_export``): uint32 magic
  ``0x616b3432`` ("ak42"), int32 version, the same 7 int32 params, a uint8
  shared-classifier flag, zero padding up to 256 bytes. Weights:
  ``attention_norm`` (all layers), ``ffn_norm``, ``norm``, ``tok_embeddings``,
  ``wq``, ``wk``, ``wv``, ``wo``, ``w1``, ``w2``, ``w3`` (all layers each),
  then the classifier if not shared. No rotary tables are stored.

Matrices are row-major ``[out][in]`` (the ``nn.Linear.weight`` layout).
"""

import dataclasses
import os
import struct
from typing import Dict, List, Optional, Tuple, Union

import numpy as np

from ..errors import GPTQError
from ..files.inputs import read_and_parse
from .architectures import Architecture
from .config import Llama2cConfig

MAGIC = 0x616B3432
VERSION1_HEADER_BYTES = 256
LEGACY_HEADER_BYTES = 7 * 4
ROPE_THETA = 10000.0
#: The epsilon of llama2.c's RMS normalization.
RMS_NORM_EPS = 1e-5


@dataclasses.dataclass
class Llama2cCheckpoint:
    """A parsed checkpoint: its config and its weights by llama2.c name.

    Weight names: ``tok_embeddings``, ``norm``, ``output`` (only when the
    classifier is not shared), ``freq_cis_real``/``freq_cis_imag``, and per
    layer ``layers.{i}.attention_norm``, ``layers.{i}.ffn_norm``,
    ``layers.{i}.attention.{wq,wk,wv,wo}``,
    ``layers.{i}.feed_forward.{w1,w2,w3}``.
    """

    config: Llama2cConfig
    weights: Dict[str, np.ndarray]
    version: int  # 0 for the legacy format

    @property
    def classifier_name(self) -> str:
        """Name of the weight the output classifier multiplies with."""
        return "tok_embeddings" if self.config.shared_classifier else "output"

    @property
    def rms_norm_eps(self) -> float:
        return RMS_NORM_EPS

    @property
    def architecture(self) -> Architecture:
        """llama2.c's Llama: the rotary tables are among the weights."""
        return Architecture(rms_norm_eps=RMS_NORM_EPS)

    def module_attributes(self) -> Dict[str, str]:
        """No module attributes besides the ones every import has."""
        return {}

    def quantized_weights(self) -> dict:
        """None: every weight is float."""
        return {}


def rope_tables(head_size: int, seq_len: int, theta: float = ROPE_THETA) -> Tuple[np.ndarray, np.ndarray]:
    """Rotary cos/sin tables ``[seq_len, head_size / 2]`` as llama2.c computes them.

    Follows ``precompute_freqs_cis`` of llama2.c's ``model.py`` in float32:
    ``freqs = 1 / theta ** (arange(0, head_size, 2) / head_size)``.
    """
    exponents = np.arange(0, head_size, 2, dtype=np.float32)[: head_size // 2] / np.float32(head_size)
    freqs = (1.0 / (np.float32(theta) ** exponents)).astype(np.float32)
    angles = np.outer(np.arange(seq_len, dtype=np.float32), freqs).astype(np.float32)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def _size(shape: Tuple[int, ...]) -> int:
    count = 1
    for extent in shape:
        count *= extent
    return count


def _layer_shapes(cfg: Llama2cConfig) -> Dict[str, Tuple[int, ...]]:
    return {
        "attention_norm": (cfg.dim,),
        "ffn_norm": (cfg.dim,),
        "attention.wq": (cfg.q_dim, cfg.dim),
        "attention.wk": (cfg.kv_dim, cfg.dim),
        "attention.wv": (cfg.kv_dim, cfg.dim),
        "attention.wo": (cfg.dim, cfg.q_dim),
        "feed_forward.w1": (cfg.hidden_dim, cfg.dim),
        "feed_forward.w2": (cfg.dim, cfg.hidden_dim),
        "feed_forward.w3": (cfg.hidden_dim, cfg.dim),
    }


def _per_layer(cfg: Llama2cConfig, suffix: str) -> List[Tuple[str, Tuple[int, ...]]]:
    shape = _layer_shapes(cfg)[suffix]
    return [(f"layers.{i}.{suffix}", shape) for i in range(cfg.n_layers)]


def weight_layout(cfg: Llama2cConfig, version: int) -> List[Tuple[str, Tuple[int, ...]]]:
    """The (name, shape) sequence of the float32 arrays in a checkpoint body."""
    vocab = (cfg.vocab_size, cfg.dim)
    half = (cfg.seq_len, cfg.head_size // 2)
    if version == 0:
        layout = [("tok_embeddings", vocab)]
        layout += _per_layer(cfg, "attention_norm")
        for suffix in ("attention.wq", "attention.wk", "attention.wv", "attention.wo"):
            layout += _per_layer(cfg, suffix)
        layout += _per_layer(cfg, "ffn_norm")
        for suffix in ("feed_forward.w1", "feed_forward.w2", "feed_forward.w3"):
            layout += _per_layer(cfg, suffix)
        layout += [("norm", (cfg.dim,)), ("freq_cis_real", half), ("freq_cis_imag", half)]
    elif version == 1:
        layout = _per_layer(cfg, "attention_norm") + _per_layer(cfg, "ffn_norm")
        layout += [("norm", (cfg.dim,)), ("tok_embeddings", vocab)]
        for suffix in (
            "attention.wq",
            "attention.wk",
            "attention.wv",
            "attention.wo",
            "feed_forward.w1",
            "feed_forward.w2",
            "feed_forward.w3",
        ):
            layout += _per_layer(cfg, suffix)
    else:
        raise GPTQError(f"unsupported llama2.c checkpoint version {version}, expected 0 or 1")
    if not cfg.shared_classifier:
        layout.append(("output", vocab))
    return layout


def body_floats(cfg: Llama2cConfig, version: int) -> int:
    """The number of float32 values after the header, from the header alone.

    Equal to the sum of the sizes in :func:`weight_layout`, computed without
    building the layout, so that an absurd header (billions of layers) costs
    nothing before the file size refutes it. Python integers do not overflow.
    """
    per_layer = 2 * cfg.dim + 2 * cfg.dim * cfg.dim + 2 * cfg.kv_dim * cfg.dim + 3 * cfg.hidden_dim * cfg.dim
    count = cfg.n_layers * per_layer + cfg.vocab_size * cfg.dim + cfg.dim
    if version == 0:
        count += 2 * cfg.seq_len * (cfg.head_size // 2)
    if not cfg.shared_classifier:
        count += cfg.vocab_size * cfg.dim
    return count


def _expected_size(head: bytes, size: Optional[int]) -> Tuple[Llama2cConfig, int, int, int]:
    """Check a checkpoint's header against the file's size before any allocation.

    ``head`` holds at least the first 256 bytes of the file (all of it when it
    is shorter) and ``size`` is the file's size (None when unknown: a pipe).
    Returns (config, version, header size, file size the header implies);
    raises GPTQError when the header is malformed, the size is not the one
    the header implies, or (version 1) the rotary tables computed from
    ``seq_len`` would be larger than the weights themselves.
    """
    cfg, version, offset = _parse_header(head)
    cfg.validate()
    expected = offset + 4 * body_floats(cfg, version)
    if size is None:
        size = expected
    if size != expected:
        kind = "truncated" if size < expected else "corrupt"
        raise GPTQError(
            f"{kind} checkpoint: {size} bytes, expected {expected} for "
            f"{cfg} (format version {version})"
        )
    if version != 0:
        # Version 1 stores no rotary tables; they are computed, so seq_len is
        # bounded by the file's contents, as the legacy format bounds it.
        table_bytes = 2 * 4 * cfg.seq_len * (cfg.head_size // 2)
        if table_bytes > size - offset:
            raise GPTQError(
                f"invalid checkpoint header: seq_len {cfg.seq_len} needs rotary tables of "
                f"{table_bytes} bytes, more than the {size - offset} bytes of weights"
            )
    return cfg, version, offset, expected


def _parse_header(data: bytes) -> Tuple[Llama2cConfig, int, int]:
    """Return (config, version, header size) from the start of a checkpoint."""
    if len(data) < LEGACY_HEADER_BYTES:
        raise GPTQError(
            f"truncated checkpoint: {len(data)} bytes, shorter than the "
            f"{LEGACY_HEADER_BYTES}-byte header"
        )
    (first,) = struct.unpack_from("<I", data, 0)
    if first != MAGIC:
        dim, hidden, layers, heads, kv_heads, vocab, seq = struct.unpack_from("<7i", data, 0)
        cfg = Llama2cConfig(dim, hidden, layers, heads, kv_heads, abs(vocab), seq, vocab > 0)
        return cfg, 0, LEGACY_HEADER_BYTES
    if len(data) < 8:
        raise GPTQError("truncated checkpoint: header ends before the version field")
    (version,) = struct.unpack_from("<i", data, 4)
    if version != 1:
        raise GPTQError(
            f"unsupported llama2.c checkpoint version {version}, expected the legacy "
            "format or version 1 (float32)"
        )
    if len(data) < VERSION1_HEADER_BYTES:
        raise GPTQError(
            f"truncated checkpoint: {len(data)} bytes, shorter than the "
            f"{VERSION1_HEADER_BYTES}-byte version 1 header"
        )
    params = struct.unpack_from("<7i", data, 8)
    (shared,) = struct.unpack_from("<B", data, 36)
    if shared not in (0, 1):
        raise GPTQError(f"invalid checkpoint header: shared_classifier flag is {shared}, expected 0 or 1")
    return Llama2cConfig(*params, shared_classifier=bool(shared)), 1, VERSION1_HEADER_BYTES


def parse_checkpoint(data: bytes) -> Llama2cCheckpoint:
    """Parse a checkpoint from its bytes; raise GPTQError if it is malformed.

    The body must have exactly the size the header implies. For version 1,
    whose files carry no rotary tables, the tables are computed with
    :func:`rope_tables`.
    """
    cfg, version, offset, _ = _expected_size(data[:VERSION1_HEADER_BYTES], len(data))
    weights: Dict[str, np.ndarray] = {}
    for name, shape in weight_layout(cfg, version):
        count = _size(shape)
        array = np.frombuffer(data, dtype="<f4", count=count, offset=offset)
        weights[name] = array.reshape(shape).astype(np.float32)
        offset += 4 * count
    if version != 0:
        weights["freq_cis_real"], weights["freq_cis_imag"] = rope_tables(cfg.head_size, cfg.seq_len)
    for name, array in weights.items():
        if not np.all(np.isfinite(array)):
            raise GPTQError(f"corrupt checkpoint: weight {name} holds non-finite values")
    return Llama2cCheckpoint(cfg, weights, version)


def read_checkpoint(path: Union[str, os.PathLike]) -> Llama2cCheckpoint:
    """Read and parse the checkpoint at ``path``.

    The header is checked against the file's size before the body is read.
    """

    def check_header(head: bytes, size: Optional[int]) -> int:
        return _expected_size(head, size)[3]

    return read_and_parse(
        path, "checkpoint", parse_checkpoint, header=(VERSION1_HEADER_BYTES, check_header)
    )


def serialize_checkpoint(
    cfg: Llama2cConfig, weights: Dict[str, np.ndarray], version: int = 0
) -> bytes:
    """Serialize weights in the given format (the inverse of parse_checkpoint).

    Used to write synthetic checkpoints for tests; the legacy format needs
    ``freq_cis_real``/``freq_cis_imag`` among ``weights``.
    """
    layout = weight_layout(cfg, version)
    if version == 0:
        vocab = cfg.vocab_size if cfg.shared_classifier else -cfg.vocab_size
        header = struct.pack(
            "<7i", cfg.dim, cfg.hidden_dim, cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, vocab, cfg.seq_len
        )
    else:
        header = struct.pack(
            "<Ii7iB",
            MAGIC,
            version,
            cfg.dim,
            cfg.hidden_dim,
            cfg.n_layers,
            cfg.n_heads,
            cfg.n_kv_heads,
            cfg.vocab_size,
            cfg.seq_len,
            int(cfg.shared_classifier),
        )
        header += b"\0" * (VERSION1_HEADER_BYTES - len(header))
    body = []
    for name, shape in layout:
        array = np.asarray(weights[name], dtype="<f4")
        if array.shape != shape:
            raise GPTQError(f"weight {name} has shape {array.shape}, expected {shape}")
        body.append(array.tobytes())
    return header + b"".join(body)
