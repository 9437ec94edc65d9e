"""An independent reader of GPTQ checkpoints, for the tests.

Written from the formats' descriptions, sharing no code with the package:

* safetensors: an 8-byte little-endian header size ``n``, ``n`` bytes of
  JSON (per tensor ``dtype``, ``shape`` and ``data_offsets`` [begin, end)
  relative to the end of the header; an optional ``__metadata__``), then
  the raw little-endian data;
* GPTQ ("v1", the reference GPTQ/AutoGPTQ layout): ``qweight`` int32
  ``[in * bits / 32, out]``, each output column's codes along the input as
  one continuous little-endian bit stream of 32-bit words; ``qzeros`` int32
  ``[groups, out * bits / 32]``, zero points minus one packed the same way
  along the output; ``scales`` float16 ``[groups, out]``; ``g_idx`` int32
  ``[in]``; ``W[o, j] = scales[g, o] * (q[j, o] - qzeros[g, o] - 1)`` with
  ``g = g_idx[j]``;
* GPTQ "v2" (``checkpoint_format`` ``gptq_v2``): the same, but ``qzeros``
  holds the zero points themselves, ``W = scales * (q - qzeros)``.

Bits are taken out of the bytes with ``np.unpackbits`` rather than by
shifts, so that a shared mistake in shifting cannot pass unnoticed.
"""

import json
import struct
from pathlib import Path
from typing import Dict, Optional, Tuple

import numpy as np

_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1", "U8": "u1"}


def _header(raw: bytes) -> Tuple[dict, int]:
    (size,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8 : 8 + size]), size


def read_metadata(path: Path) -> Optional[Dict[str, str]]:
    """A safetensors file's ``__metadata__``, None when it has none."""
    return _header(Path(path).read_bytes())[0].get("__metadata__")


def read_safetensors(path: Path) -> Dict[str, np.ndarray]:
    """Every tensor of a safetensors file (BF16 widened to float32)."""
    raw = Path(path).read_bytes()
    header, size = _header(raw)
    data = raw[8 + size :]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        chunk = data[begin:end]
        if entry["dtype"] == "BF16":
            halves = np.frombuffer(chunk, dtype="<u2").astype(np.uint32) << 16
            array = halves.view(np.float32)
        else:
            array = np.frombuffer(chunk, dtype=_DTYPES[entry["dtype"]])
        tensors[name] = array.reshape(entry["shape"])
    return tensors


def _stream_codes(words: np.ndarray, count: int, bits: int) -> np.ndarray:
    """Codes of ``bits`` bits from each row of 32-bit words (bit 0 of byte 0 first)."""
    stream = np.unpackbits(np.ascontiguousarray(words).astype("<i4").view(np.uint8), axis=1, bitorder="little")
    fields = stream[:, : count * bits].reshape(words.shape[0], count, bits).astype(np.int64)
    return fields @ (1 << np.arange(bits, dtype=np.int64))


def zero_points(tensors: Dict[str, np.ndarray], prefix: str, bits: int, checkpoint_format: str = "gptq") -> np.ndarray:
    """The zero points ``[groups, out]`` of quantized layer ``prefix``."""
    qzeros = tensors[f"{prefix}.qzeros"]
    stored = _stream_codes(qzeros, qzeros.shape[1] * 32 // bits, bits)
    return stored + {"gptq": 1, "gptq_v2": 0}[checkpoint_format]


def dequantize(tensors: Dict[str, np.ndarray], prefix: str, bits: int, checkpoint_format: str = "gptq") -> np.ndarray:
    """The float64 weight ``[out, in]`` of quantized layer ``prefix``."""
    qweight = tensors[f"{prefix}.qweight"]
    scales, g_idx = tensors[f"{prefix}.scales"].astype(np.float64), tensors[f"{prefix}.g_idx"]
    columns = qweight.shape[0] * 32 // bits
    q = _stream_codes(qweight.T, columns, bits)  # [out, in]
    zeros = zero_points(tensors, prefix, bits, checkpoint_format)  # [groups, out]
    return scales[g_idx].T * (q - zeros[g_idx].T)
