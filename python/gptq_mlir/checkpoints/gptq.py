"""GPTQ checkpoints in the layout inference engines load (``export-gptq``,
``import-gptq``); see docs/gptq-checkpoints.md.

A checkpoint is a folder with ``config.json`` (the config of one of the
architectures :mod:`gptq_mlir.importers.architectures` reads, with
``quantization_config``), ``quantize_config.json`` and
``model.safetensors`` (AutoGPTQ's repositories may lack the
``quantization_config`` and name the file otherwise, e.g.
``gptq_model-4bit-128g.safetensors``). Per quantized linear layer ``P``
(Hugging Face's module name, ``model.layers.0.self_attn.q_proj``):

* ``P.qweight``, int32 ``[in * bits / 32, out]``: column ``o`` is output
  ``o``'s codes in input order as one little-endian bit stream of 32-bit
  words (code ``j`` in bits ``[j * bits, (j + 1) * bits)``); for 2, 4 and 8
  bits, ``32 / bits`` whole codes per word, for 3 bits 32 codes in 3 words,
  codes 10 and 21 crossing words;
* ``P.qzeros``, int32 ``[groups, out * bits / 32]``: each group's zero
  points minus one (``checkpoint_format`` ``gptq``, the original "v1"
  convention) or the zero points themselves (``gptq_v2``), packed the same
  way along the output dimension;
* ``P.scales``, float16 ``[groups, out]``;
* ``P.g_idx``, int32 ``[in]``: each input's group.

Weight ``W[o, j] = scales[g, o] * (q[j, o] - (qzeros[g, o] + 1))`` with
``g = g_idx[j]`` (without the ``+ 1`` for ``gptq_v2``). The other tensors
are stored as they were, under their Hugging Face names, and a tied
model's classifier as ``lm_head.weight`` too. q and k features are stored
in Hugging Face's row order (:func:`gptq_mlir.importers.architectures.rotary_rows`:
the q and k projections, their biases, the q and k parts of a fused qkv
projection). Modules of import-hf and import-gptq keep that order
(``gptq.model``'s ``rotary = "halves"``); those of import-llama2c have
llama2.c's, so that their export permutes every array indexed by output
row (qweight's columns, scales, qzeros).

The rewritten model (``gptq-opt --gptq-quantize-model``) holds per layer
``L`` the constants ``L.qweight`` (``gptq.pack``'s layout: int32
``[out, ceil(in * bits / 32)]``, each output row one little-endian bit
stream), ``L.scales`` and ``L.zeros`` (float32 ``[out, groups]``) and
``L.g_idx``, then ``gptq.unpack`` and ``gptq.dequantize``:
``W[o, j] = scales[o, g] * (codes[o, j] - zeros[o, g])``.
"""

import dataclasses
import functools
import json
import math
import os
import re
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple, Union

import numpy as np

from ..errors import GPTQError
from ..files import inputs
from ..files.outputs import Run
from ..importers import architectures, emitter, hf
from ..importers.config import Llama2cConfig
from ..importers.llama2c import RMS_NORM_EPS, ROPE_THETA
from ..runtime import native
from ..runtime.archives import parameter_archives

SUPPORTED_BITS = (2, 3, 4, 8)
#: The default checkpoint_format, the original ("v1") one.
CHECKPOINT_FORMAT = "gptq"
#: What qzeros stores is the zero point minus this, by checkpoint_format:
#: v1 stores zero - 1, gptq_v2 the zero itself.
ZERO_OFFSET = {"gptq": 1, "gptq_v2": 0}
CHECKPOINT_FORMATS = tuple(ZERO_OFFSET)
QUANTIZE_CONFIG_FILE = "quantize_config.json"
#: The tensors of a quantized layer, with their safetensors dtypes.
QUANTIZED_TENSORS = {"qweight": ("I32",), "qzeros": ("I32",), "scales": ("F16", "F32"), "g_idx": ("I32",)}
_NUMPY_DTYPES = {"F32": np.float32, "F16": np.float16, "I32": np.int32}


# Bit streams ------------------------------------------------------------------


def pack_stream(codes: np.ndarray, bits: int) -> np.ndarray:
    """Pack each row of unsigned ``codes`` ``[n, m]`` (values below
    ``2 ** bits``) as a little-endian bit stream of 32-bit words: code ``j``
    in bits ``[j * bits, (j + 1) * bits)``. Returns uint32
    ``[n, ceil(m * bits / 32)]``; unused high bits of the last word are 0."""
    n, m = codes.shape
    padded = np.zeros((n, -(-m // 32) * 32), dtype=np.uint64)
    padded[:, :m] = codes
    # Every 32 codes fill exactly ``bits`` words.
    runs = padded.reshape(n, -1, 32)
    words = np.zeros((n, runs.shape[1], bits), dtype=np.uint64)
    for k in range(32):
        word, shift = divmod(k * bits, 32)
        words[:, :, word] |= runs[:, :, k] << np.uint64(shift)
        if shift + bits > 32:
            words[:, :, word + 1] |= runs[:, :, k] >> np.uint64(32 - shift)
    flat = (words & np.uint64(0xFFFFFFFF)).astype(np.uint32).reshape(n, -1)
    return np.ascontiguousarray(flat[:, : -(-m * bits // 32)])


def unpack_stream(words: np.ndarray, count: int, bits: int) -> np.ndarray:
    """The inverse of :func:`pack_stream`: ``count`` codes of ``bits`` bits
    from each row of 32-bit ``words``, as uint8 ``[n, count]``."""
    words = words.view(np.uint32).astype(np.uint64)
    wide = np.concatenate([words, np.zeros((words.shape[0], 1), dtype=np.uint64)], axis=1)
    offsets = np.arange(count, dtype=np.int64) * bits
    index, shift = offsets // 32, (offsets % 32).astype(np.uint64)
    pairs = wide[:, index] | (wide[:, index + 1] << np.uint64(32))
    return ((pairs >> shift) & np.uint64((1 << bits) - 1)).astype(np.uint8)


# The rewritten model ----------------------------------------------------------

#: Bytes per element of each element type a constant may have.
_ELEMENT_BYTES = {"f32": 4, "i32": 4, "f16": 2, "bf16": 2, "i8": 1, "i64": 8}
_FLOAT_ELEMENTS = ("f32", "f16", "bf16")
#: Rows of a float weight converted at a time on export (about this many
#: bytes), so that no tensor is held whole.
CHUNK_BYTES = 64 << 20


class ConstantData:
    """A constant's data, read when it is asked for: a resource blob of the
    module, a tensor of a safetensors file, or an array of an .npz archive,
    of element type ``element`` (``f32``, ``i32``, ``f16``, ``bf16``,
    ``i8``) and shape ``shape``, both already checked against the archive's
    header where it has one."""

    def __init__(self, name: str, element: str, shape: Tuple[int, ...], blob: Optional[bytes] = None,
                 file: Optional[inputs.SafetensorsFile] = None, npz: Optional[Path] = None):
        self.name, self.element, self.shape = name, element, tuple(shape)
        self._blob, self._file, self._npz = blob, file, npz

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * _ELEMENT_BYTES[self.element]

    def stored(self) -> np.ndarray:
        """All of it as stored (bfloat16 as its uint16 bits)."""
        dtype = _RESOURCE_DTYPES[self.element]
        if self._blob is not None:
            return np.frombuffer(self._blob, dtype=dtype).reshape(self.shape)
        if self._file is not None:
            return np.frombuffer(self._file.read_range(self.name, 0, self.nbytes), dtype=dtype).reshape(self.shape)
        with inputs.NpzArchive(self._npz) as archive:
            return archive.read(self.name, dtype, self.shape)

    def chunks(self, max_bytes: Optional[int] = None) -> Iterator[np.ndarray]:
        """Its rows (first dimension) as stored, a run of rows of at most
        about ``max_bytes`` (default :data:`CHUNK_BYTES`) at a time; of a
        tensor in a safetensors file only those rows are read, others are
        read whole and cut."""
        max_bytes = CHUNK_BYTES if max_bytes is None else max_bytes
        if len(self.shape) == 0 or self.nbytes == 0:
            yield self.stored()
            return
        rows = self.shape[0]
        row_bytes = self.nbytes // rows
        step = max(1, max_bytes // row_bytes)
        whole = None if self._file is not None else self.stored()
        dtype = _RESOURCE_DTYPES[self.element]
        for start in range(0, rows, step):
            stop = min(rows, start + step)
            if whole is not None:
                yield whole[start:stop]
                continue
            data = self._file.read_range(self.name, start * row_bytes, (stop - start) * row_bytes)
            yield np.frombuffer(data, dtype=dtype).reshape((stop - start,) + self.shape[1:])

    def array(self) -> np.ndarray:
        """All of it as its element type says, bfloat16 widened to float32
        (exactly)."""
        array = self.stored()
        return _bfloat16_as_float32(array) if self.element == "bf16" else array


class QuantizedLayer:
    """One layer of a rewritten model, as its constants hold it; each array
    is read when first asked for. A layer whose columns the rewrite sorted
    by group (act-order's; ``perm``, the contraction reads its activation
    permuted) is given back in the order of its inputs: ``qweight``,
    ``codes`` and ``g_idx`` as if it had not been sorted."""

    def __init__(self, name: str, bits: int, columns: int, data: Dict[str, ConstantData]):
        self.name, self.bits, self.columns = name, bits, columns
        self.data = data  # qweight, scales, zeros, g_idx, and perm when sorted
        self.out, self.groups = data["scales"].shape

    @functools.cached_property
    def perm(self) -> Optional[np.ndarray]:
        """int64 [in]: column j of the stored weight is input perm[j]; None
        when the columns are in the order of the inputs."""
        if "perm" not in self.data:
            return None
        perm = self.data["perm"].array().astype(np.int64)
        if not np.array_equal(np.sort(perm), np.arange(self.columns)):
            raise GPTQError(f"layer {self.name}: {self.name}.perm is not a permutation of its {self.columns} inputs")
        return perm

    def _unsorted(self, array: np.ndarray) -> np.ndarray:
        """``array``'s last dimension (stored columns) in the inputs' order."""
        if self.perm is None:
            return array
        out = np.empty_like(array)
        out[..., self.perm] = array
        return out

    @functools.cached_property
    def qweight(self) -> np.ndarray:
        """int32 [out, ceil(in * bits / 32)], each row a bit stream."""
        stored = self.data["qweight"].stored()
        if self.perm is None:
            return stored
        codes = self._unsorted(unpack_stream(stored, self.columns, self.bits))
        return pack_stream(codes, self.bits).view(np.int32)

    @property
    def codes(self) -> np.ndarray:
        """uint8 [out, in] (unpacked from :attr:`qweight` on each call)."""
        return unpack_stream(self.qweight, self.columns, self.bits)

    @functools.cached_property
    def scales(self) -> np.ndarray:
        """float32 [out, groups]."""
        return self.data["scales"].array().astype(np.float32)

    @functools.cached_property
    def zeros(self) -> np.ndarray:
        """float32 [out, groups]."""
        return self.data["zeros"].array().astype(np.float32)

    @functools.cached_property
    def g_idx(self) -> np.ndarray:
        """int32 [in]."""
        return self._unsorted(self.data["g_idx"].array().astype(np.int32))


class _Lazy(Mapping):
    """A mapping whose values are made from ``sources`` when looked up."""

    def __init__(self, sources: Dict[str, Any], make):
        self._sources, self._make = sources, make

    def __getitem__(self, name: str) -> Any:
        return self._make(self._sources[name])

    def __contains__(self, name: object) -> bool:
        # Mapping's would make the value (read a whole tensor) to find out.
        return name in self._sources

    def __iter__(self):
        return iter(self._sources)

    def __len__(self) -> int:
        return len(self._sources)


@dataclasses.dataclass
class RewrittenModel:
    """What export reads of a module: its attributes, its float weights by
    resource name, and its quantized layers by layer name. ``weights`` and
    ``layers`` read their arrays when looked up (``constants`` and
    ``quantized`` say where they are without reading them), so that a model
    larger than memory can be exported one tensor at a time."""

    attributes: Dict[str, Any]  # as JSON values (NativeModule.describe_model)
    constants: Dict[str, ConstantData]
    quantized: Dict[str, QuantizedLayer]

    @property
    def weights(self) -> Mapping[str, np.ndarray]:
        return _Lazy(self.constants, ConstantData.array)

    @property
    def layers(self) -> Mapping[str, QuantizedLayer]:
        # A fresh layer per lookup: a loop over the layers holds one at a time.
        return _Lazy(self.quantized, lambda layer: QuantizedLayer(layer.name, layer.bits, layer.columns, layer.data))


def _string_dictionary(value: Any, what: str) -> Dict[str, str]:
    """A module attribute that maps names to strings (as the C API gives
    it, a JSON object)."""
    if not isinstance(value, dict):
        raise GPTQError(f"module attribute {what} is not a dictionary")
    for key, item in value.items():
        if not isinstance(item, str):
            raise GPTQError(f"module attribute {what}: {inputs.shown(key)} is {inputs.shown(str(item), 40)}, "
                            "expected a string")
    return value


_RESOURCE_DTYPES = {"f32": "<f4", "i32": "<i4", "f16": "<f2", "bf16": "<u2", "i8": "i1", "i64": "<i8"}
#: The safetensors dtype of each element type a parameter archive's tensor
#: may have.
_SAFETENSORS_DTYPES = {"f32": "F32", "i32": "I32", "f16": "F16", "bf16": "BF16", "i8": "I8", "i64": "I64"}


def _bfloat16_as_float32(bits: np.ndarray) -> np.ndarray:
    """bfloat16 numbers (their bits, uint16) as float32, exactly."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


class _Archives:
    """The tensors of a module's parameter archives (``gptq.parameters``:
    .npz archives, safetensors files and indexes of shards), found by name;
    a safetensors tensor's dtype and shape are checked when it is found, an
    .npz array's when it is read."""

    def __init__(self, folder: Path, names: List[str]):
        self._npz: List[Tuple[Path, frozenset]] = []
        self._tensors: List[hf.TensorFiles] = []
        for name in names:
            path = folder / name
            if path.name.endswith(".npz"):
                with inputs.NpzArchive(path) as archive:
                    self._npz.append((path, frozenset(archive.names())))
            elif path.name.endswith(".safetensors"):
                self._tensors.append(hf.TensorFiles(path.parent, path.name))
            elif path.name.endswith(".index.json"):
                self._tensors.append(hf.TensorFiles(path.parent, path.name[: -len(".index.json")]))
            else:
                raise GPTQError(f"{path}: expected an .npz archive, a .safetensors file or a safetensors index")

    def find(self, name: str, element: str, shape: Tuple[int, ...]) -> Optional[ConstantData]:
        """Tensor ``name`` of the element type and shape the module
        declares; None when no archive holds it."""
        for path, members in self._npz:
            if name in members:
                return ConstantData(name, element, shape, npz=path)
        for files in self._tensors:
            if name in files:
                file, _ = files.located(name, (_SAFETENSORS_DTYPES[element],), tuple(shape))
                return ConstantData(name, element, shape, file=file)
        return None


def _open_module(path: Path) -> native.NativeModule:
    """The module at ``path`` (text or bytecode), parsed and verified by
    the C API; GPTQError naming the module and the first error otherwise."""
    # Said as every command says it of a missing file, a FIFO or a folder.
    with inputs.open_regular(path, "model"):
        pass
    try:
        return native.open_module(path)
    except GPTQError as error:
        message = str(error)
        raise GPTQError(message if str(path) in message else f"cannot read model {path}: {message}") from None


def _function_constants(path: Path, module: native.NativeModule, function: Dict[str, Any],
                        external: Optional[_Archives], ours_of: Dict[str, str]
                        ) -> List[Optional[Tuple[str, ConstantData]]]:
    """Each of a function's dense_resource constants (as the C API lists
    them) as (our name, its data); None for one of an element type that
    no weight has."""
    constants: List[Optional[Tuple[str, ConstantData]]] = []
    for constant in function["constants"]:
        name, element, shape = constant["name"], constant["element"], tuple(constant["shape"])
        if element not in _ELEMENT_BYTES:
            constants.append(None)
            continue
        data = None
        if constant["inline"]:
            blob = module.resource(name)
            data = ConstantData(name, element, shape, blob=blob)
            if blob.size != data.nbytes:
                held = blob.size // _ELEMENT_BYTES[element]
                raise GPTQError(f"{path}: resource {name} holds {held} values, its type {shape}")
        elif external is not None:
            data = external.find(name, element, shape)
        if data is None:
            raise GPTQError(f"{path}: no data for resource {inputs.shown(name)}")
        constants.append((ours_of.get(name, name), data))
    return constants


def _rewritten_layer(path: Path, layer: Dict[str, Any], constants: List[Optional[Tuple[str, ConstantData]]],
                    by_name: Dict[str, ConstantData], used: set) -> QuantizedLayer:
    """One gptq.dequantize of a function (as the C API describes it) as a
    layer, checked against the shapes its gptq.unpack declares; the names
    of the constants it reads are added to ``used``."""

    def constant(role: str) -> Optional[Tuple[str, ConstantData]]:
        index = layer.get(role)
        return None if index is None else constants[index]

    packed = constant("qweight")
    if packed is None:
        raise GPTQError(f"{path}: a gptq.dequantize whose codes are not gptq.unpack of a constant")
    qweight_name, qweight = packed
    if not qweight_name.endswith(".qweight"):
        raise GPTQError(f"{path}: packed weights {inputs.shown(qweight_name)} are not named <layer>.qweight")
    name = qweight_name[: -len(".qweight")]
    where = f"{path}: layer {inputs.shown(name)}"
    bits, out, columns = layer["bits"], layer["out"], layer["columns"]
    if out is None or columns is None:
        shown = " x ".join("?" if size is None else str(size) for size in (out, columns))
        raise GPTQError(f"{where}: gptq.unpack of {shown} codes of {bits} bits, expected static sizes")
    words = (out, -(-columns * bits // 32))
    if qweight.shape != words or qweight.element != "i32":
        raise GPTQError(
            f"{where}: packed weights {list(qweight.shape)} {_RESOURCE_DTYPES[qweight.element]}, expected "
            f"int32 {list(words)} for {out} x {columns} codes of {bits} bits"
        )
    parts = {"qweight": qweight}
    for role in ("scales", "zeros", "g_idx"):
        operand = constant(role)
        if operand is None:
            raise GPTQError(f"{where}: the {role} operand of its gptq.dequantize is not a constant")
        data = operand[1]
        element = "i32" if role == "g_idx" else "f32"
        if data.element != element:
            raise GPTQError(f"{where}: {role} of element type {data.element}, expected {element}")
        parts[role] = data
        used.add(operand[0])
    groups = parts["scales"].shape[1] if len(parts["scales"].shape) == 2 else 0
    for role, expected in (("scales", (out, groups)), ("zeros", (out, groups)), ("g_idx", (columns,))):
        if parts[role].shape != expected or groups < 1:
            raise GPTQError(f"{where}: {role} of shape {list(parts[role].shape)}, expected {list(expected)}")
    used.add(qweight_name)
    # Columns sorted by group: the permutation the activation is read
    # through.
    perm = by_name.get(f"{name}.perm")
    if perm is not None:
        if perm.shape != (columns,) or perm.element != "i64":
            raise GPTQError(f"{where}: {name}.perm of shape {list(perm.shape)} "
                            f"{_RESOURCE_DTYPES[perm.element]}, expected int64 [{columns}]")
        parts["perm"] = perm
        used.add(f"{name}.perm")
    return QuantizedLayer(name, bits, columns, parts)


def read_rewritten_model(path: Union[str, os.PathLike]) -> RewrittenModel:
    """The quantized layers and float weights of a module that
    ``gptq-opt --gptq-quantize-model`` wrote (text or bytecode), found but
    not read: arrays are read when looked up.

    The module is parsed and verified, and its layers and constants found,
    by the C API (:meth:`gptq_mlir.runtime.native.NativeModule.describe_model`).
    Every constant's data, in the module or in its parameter archive, must
    have the dtype and shape its type declares (an .npz array's is checked
    when it is read), and every quantized layer's constants the shapes
    ``gptq.unpack`` and ``gptq.dequantize`` declare; GPTQError naming the
    module, archive or resource otherwise."""
    path = Path(path)
    module = _open_module(path)
    description = module.describe_model()
    attributes: Dict[str, Any] = description["attributes"]
    names = description["parameters"]
    if isinstance(names, dict):
        raise GPTQError(f"{path}: {names['error']}")
    external = None if names is None else _Archives(path.parent, names)
    # A weight read from a checkpoint in place is named by its tensor's name;
    # the export knows weights by ours.
    ours_of = {}
    if hf.NAMES_ATTRIBUTE in attributes:
        ours_of = {theirs: ours for ours, theirs in _string_dictionary(
            attributes[hf.NAMES_ATTRIBUTE], hf.NAMES_ATTRIBUTE).items()}

    # Each function's layers read its own constants (an imported model's
    # forward, prefill and decode read the same resources; a layer is the
    # same layer in each).
    layers: Dict[str, QuantizedLayer] = {}
    used = set()
    all_constants: List[Tuple[str, ConstantData]] = []
    for function in description["functions"]:
        constants = _function_constants(path, module, function, external, ours_of)
        found = [constant for constant in constants if constant is not None]
        by_name = dict(found)
        for layer in function["layers"]:
            quantized = _rewritten_layer(path, layer, constants, by_name, used)
            layers[quantized.name] = quantized
        all_constants.extend(found)
    weights = {name: data for name, data in all_constants if name not in used}
    return RewrittenModel(attributes, weights, layers)


# Export -------------------------------------------------------------------------


@dataclasses.dataclass
class _Scheme:
    bits: int
    group_size: int
    desc_act: bool
    sym: bool


def _group_size_of(layer: QuantizedLayer) -> Optional[int]:
    """The group size the layer's g_idx describes (None: one group, any size
    at least ``in`` fits); GPTQError unless its groups are runs of one size
    (the last one shorter) or, with act-order, sets of that size."""
    groups, columns = layer.groups, layer.columns
    if groups == 1:
        if np.any(layer.g_idx != 0):
            raise GPTQError(f"layer {layer.name}: g_idx names groups beyond its one group of scales")
        return None
    if layer.g_idx.min() < 0 or layer.g_idx.max() >= groups:
        raise GPTQError(f"layer {layer.name}: g_idx outside [0, {groups})")
    size = int(np.count_nonzero(layer.g_idx == 0))
    counts = np.bincount(layer.g_idx, minlength=groups)
    expected = np.full(groups, size)
    expected[-1] = columns - size * (groups - 1)
    if expected[-1] <= 0 or expected[-1] > size or not np.array_equal(counts, expected):
        raise GPTQError(
            f"layer {layer.name}: its g_idx does not describe groups of one size "
            f"(group sizes {counts.tolist()}), which the checkpoint format cannot express"
        )
    return size


def _scheme(layers: Mapping[str, QuantizedLayer]) -> _Scheme:
    """The checkpoint's one quantization_config for all quantized layers;
    GPTQError naming the layers where they differ or the format cannot
    store one."""
    if not layers:
        raise GPTQError("the model has no quantized layer (gptq.unpack and gptq.dequantize of constants)")
    first = next(iter(layers.values()))
    for layer in layers.values():
        if layer.bits != first.bits:
            raise GPTQError(
                f"mixed bit widths: layer {first.name} has {first.bits} bits, layer {layer.name} "
                f"{layer.bits}; a GPTQ checkpoint has one"
            )
    if first.bits not in SUPPORTED_BITS:
        raise GPTQError(f"bits {first.bits}: the GPTQ checkpoint format stores 2, 3, 4 or 8 bits")
    sizes = {name: _group_size_of(layer) for name, layer in layers.items()}
    grouped = {size for size in sizes.values() if size is not None}
    if len(grouped) > 1:
        described = ", ".join(f"{name} {size}" for name, size in sizes.items() if size is not None)
        raise GPTQError(f"mixed group sizes ({described}); a GPTQ checkpoint has one")
    group_size = grouped.pop() if grouped else -1
    desc_act = False
    for name, layer in layers.items():
        columns = layer.columns
        if group_size > 0 and sizes[name] is None and columns > group_size:
            raise GPTQError(
                f"layer {name} has one group of {columns} columns but the others groups of "
                f"{group_size}; a GPTQ checkpoint has one group size"
            )
        if group_size > 0 and sizes[name] is not None:
            desc_act |= not np.array_equal(layer.g_idx, np.arange(columns) // group_size)
    maxq = (1 << first.bits) - 1
    sym = all(np.all(layer.zeros == (maxq + 1) // 2) for layer in layers.values())
    return _Scheme(first.bits, group_size, desc_act, sym)


def _llama2c_config(model_attribute: Dict[str, int], tied: bool) -> Dict[str, Any]:
    """config.json for a llama2.c import (llama2.c's epsilon and theta)."""
    return {
        "architectures": [hf.ARCHITECTURE],
        "model_type": "llama",
        "hidden_size": model_attribute["dim"],
        "intermediate_size": model_attribute["hidden_dim"],
        "num_hidden_layers": model_attribute["n_layers"],
        "num_attention_heads": model_attribute["n_heads"],
        "num_key_value_heads": model_attribute["n_kv_heads"],
        "vocab_size": model_attribute["vocab_size"],
        "max_position_embeddings": model_attribute["seq_len"],
        "rms_norm_eps": RMS_NORM_EPS,
        "rope_theta": ROPE_THETA,
        "hidden_act": "silu",
        "tie_word_embeddings": tied,
        "torch_dtype": "float32",
    }


def _rotary_order(model: RewrittenModel) -> str:
    """The order of the module's q and k features: "pairs" (llama2.c's, so
    that the export permutes them to Hugging Face's) or "halves"
    (Hugging Face's already)."""
    fields = model.attributes.get(emitter.MODEL_ATTRIBUTE, {})
    if not isinstance(fields, dict):
        raise GPTQError(f"module attribute {emitter.MODEL_ATTRIBUTE} is not a dictionary")
    value = fields.get("rotary", "pairs")
    if value not in ("pairs", "halves"):
        raise GPTQError(f"attribute {emitter.MODEL_ATTRIBUTE}: rotary is {inputs.shown(str(value), 40)}, "
                        "expected pairs or halves")
    return value


def _model_config(model: RewrittenModel) -> Llama2cConfig:
    values = model.attributes.get(emitter.MODEL_ATTRIBUTE)
    if values is None:
        raise GPTQError(
            f"no {emitter.MODEL_ATTRIBUTE} attribute: export-gptq needs a model "
            "imported by import-llama2c, import-hf or import-gptq"
        )
    if not isinstance(values, dict):
        raise GPTQError(f"module attribute {emitter.MODEL_ATTRIBUTE} is not a dictionary")
    fields = {}
    # head_dim is there only when the head size is not dim / n_heads.
    for key in _MODEL_FIELDS + (("head_dim",) if "head_dim" in values else ()):
        if key not in values:
            raise GPTQError(f"attribute {emitter.MODEL_ATTRIBUTE} has no field {key}")
        value = values[key]
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise GPTQError(
                f"attribute {emitter.MODEL_ATTRIBUTE}: field {key} is {inputs.shown(str(value), 40)}, "
                "expected an integer : i64"
            )
        fields[key] = value
    cfg = Llama2cConfig(**fields, shared_classifier="output" not in model.constants)
    try:
        cfg.validate()
    except GPTQError as error:
        raise GPTQError(f"attribute {emitter.MODEL_ATTRIBUTE}: {str(error).replace('invalid checkpoint header: ', '')}") from None
    # The names built from n_layers must be those of the module's weights
    # (and bounded by them: an attribute's n_layers costs nothing to write).
    layers = {int(m.group(1)) for m in map(_LAYER_WEIGHT.match, list(model.weights) + list(model.layers)) if m}
    present = max(layers) + 1 if layers else 0
    if present != cfg.n_layers:
        raise GPTQError(
            f"attribute {emitter.MODEL_ATTRIBUTE}: n_layers is {cfg.n_layers}, but the module's weights are "
            f"those of {present} layers"
        )
    return cfg


_MODEL_FIELDS = ("dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len")
_LAYER_WEIGHT = re.compile(r"layers\.(0|[1-9][0-9]{0,17})\.")


@dataclasses.dataclass
class _Output:
    """One tensor of the checkpoint: its safetensors dtype and shape, and
    what makes its data, a run of rows at a time (called once per copy)."""

    dtype: str
    shape: Tuple[int, ...]
    chunks: Callable[[], Iterator[np.ndarray]]


def _zero_points(layer: QuantizedLayer, bits: int, checkpoint_format: str) -> np.ndarray:
    """The layer's zero points as integers, checked to be what
    ``checkpoint_format`` stores."""
    maxq, offset = (1 << bits) - 1, ZERO_OFFSET[checkpoint_format]
    zeros = layer.zeros
    # Zeros no format stores, and those only gptq_v2 stores (0).
    unstorable = (zeros != np.round(zeros)) | (zeros < 0) | (zeros > maxq)
    refused = unstorable | (zeros < offset)
    if np.any(refused):
        row, group = np.argwhere(unstorable if np.any(unstorable) else refused)[0]
        stored = f"zero - {offset}" if offset else "zero"
        hint = "; --format gptq_v2 stores zero points of 0" if not np.any(unstorable) else ""
        raise GPTQError(
            f"layer {layer.name}: zero point {zeros[row, group]} (row {row}, group {group}) is not an "
            f"integer in [{offset}, {maxq}], which the {checkpoint_format} format ({stored} in {bits} bits) "
            f"can store{hint}"
        )
    return zeros.astype(np.int64)


def _scales16(layer: QuantizedLayer) -> np.ndarray:
    """The layer's scales as float16, the dtype of a GPTQ checkpoint's
    scales; GPTQError naming the first scale that is not finite, or that
    float16 turns into infinity or zero (the layer could not be exported
    faithfully)."""
    scales = layer.scales
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        scales16 = scales.astype(np.float16)
    bad = ~np.isfinite(scales16) | ((scales16 == 0) & (scales != 0))
    if np.any(bad):
        row, group = np.argwhere(bad)[0]
        value = scales[row, group]
        why = "is not finite" if not np.isfinite(value) else (
            f"does not fit float16 (magnitudes {float(np.finfo(np.float16).tiny * 2.0 ** -10):g} to "
            f"{float(np.finfo(np.float16).max):g}), the dtype of a GPTQ checkpoint's scales")
        raise GPTQError(
            f"layer {layer.name}: scale {float(value):g} of tensor {layer.name}.scales (row {row}, group {group}) "
            f"{why}; the layer cannot be exported faithfully"
        )
    return scales16


def _layer_outputs(layer: QuantizedLayer, bits: int, rows: Optional[np.ndarray],
                   checkpoint_format: str) -> Dict[str, _Output]:
    """A layer's four checkpoint tensors in ``checkpoint_format``; ``rows``
    permutes its outputs. Each reads the layer's constants afresh, so that
    the plan of a whole model holds no arrays."""
    out, columns, groups = layer.out, layer.columns, layer.groups
    for what, extent in (("in", columns), ("out", out)):
        if extent * bits % 32:
            raise GPTQError(
                f"layer {layer.name}: {what} features {extent} x {bits} bits is not a multiple of 32, "
                "which the GPTQ checkpoint format needs (leave the layer float: exclude it from quantization)"
            )

    def fresh() -> QuantizedLayer:
        return QuantizedLayer(layer.name, layer.bits, layer.columns, layer.data)

    def permuted(array: np.ndarray) -> np.ndarray:
        return array if rows is None else array[rows]

    def qweight() -> Iterator[np.ndarray]:
        # Ours is [out, in * bits / 32], each output's codes one bit stream of
        # 32-bit words; GPTQ's is the same words transposed (in * bits is a
        # multiple of 32, so no output's stream shares a word with another's).
        yield np.ascontiguousarray(permuted(fresh().qweight).T)

    def qzeros() -> Iterator[np.ndarray]:
        zeros = permuted(_zero_points(fresh(), bits, checkpoint_format))
        yield pack_stream((zeros - ZERO_OFFSET[checkpoint_format]).T, bits).view(np.int32)

    def scales() -> Iterator[np.ndarray]:
        yield np.ascontiguousarray(permuted(_scales16(fresh())).T)

    def g_idx() -> Iterator[np.ndarray]:
        yield fresh().g_idx

    return {
        "qweight": _Output("I32", (columns * bits // 32, out), qweight),
        "qzeros": _Output("I32", (groups, out * bits // 32), qzeros),
        "scales": _Output("F16", (groups, out), scales),
        "g_idx": _Output("I32", (columns,), g_idx),
    }


def float32_to_bfloat16(values: np.ndarray) -> np.ndarray:
    """Finite float32 ``values`` rounded to the nearest bfloat16, ties to
    even (as torch's conversion rounds), as its bits (uint16)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    return (rounded >> np.uint32(16)).astype(np.uint16)


#: The module's element type that a safetensors dtype stores as it is.
_SAME_ELEMENT = {"F32": "f32", "F16": "f16", "BF16": "bf16"}


def _finite_as_stored(part: np.ndarray, element: str) -> bool:
    if element == "bf16":
        return bool(np.all((part & np.uint16(0x7F80)) != np.uint16(0x7F80)))
    return bool(np.all(np.isfinite(part)))


def _float_output(name: str, data: ConstantData, dtype: str, rows: Optional[np.ndarray]) -> _Output:
    """A float weight stored as ``dtype``, converted a run of rows at a time
    (copied as it is when stored in that dtype already); ``rows`` permutes
    its first dimension (then it is read whole). GPTQError naming it for a
    weight that is not float, or holds a value that is not finite."""
    element = data.element
    if element not in _FLOAT_ELEMENTS:
        raise GPTQError(f"weight {inputs.shown(name)} is not finite floating point "
                        f"({np.dtype(_RESOURCE_DTYPES[element])})")

    def chunks() -> Iterator[np.ndarray]:
        parts = data.chunks() if rows is None else iter([data.stored()[rows]])
        for part in parts:
            if _SAME_ELEMENT[dtype] == element:
                if not _finite_as_stored(part, element):
                    raise GPTQError(f"weight {inputs.shown(name)} is not finite floating point")
                yield part
                continue
            wide = _bfloat16_as_float32(part) if element == "bf16" else part.astype(np.float32)
            if not np.all(np.isfinite(wide)):
                raise GPTQError(f"weight {inputs.shown(name)} is not finite floating point")
            if dtype == "F32":
                yield wide
                continue
            with np.errstate(over="ignore"):
                narrow = wide.astype(np.float16) if dtype == "F16" else float32_to_bfloat16(wide)
            if not _finite_as_stored(narrow, _SAME_ELEMENT[dtype]):
                value = wide.flat[int(np.argmax(~np.isfinite(
                    narrow if dtype == "F16" else _bfloat16_as_float32(narrow)).ravel()))]
                raise GPTQError(f"weight {inputs.shown(name)} holds {float(value):g}, beyond the range of "
                                f"{dtype}, its dtype in the checkpoint it was imported from")
            yield narrow

    return _Output(dtype, data.shape, chunks)


#: The safetensors metadata transformers' loader needs (it reads the
#: header's ``format``, and fails on a file without metadata).
SAFETENSORS_METADATA = {"format": "pt"}
#: The order in which the safetensors package lays out tensors: by dtype
#: (this rank, the highest first), then by name. The export keeps it, so
#: that its file is the one that package would write.
_DTYPE_RANK = {"I64": 4, "F32": 3, "I32": 2, "BF16": 1, "F16": 0}


def _write_safetensors(outputs: Dict[str, _Output], path: Path) -> None:
    """Write ``outputs`` to ``path`` as a safetensors file with
    :data:`SAFETENSORS_METADATA`: the header first (every tensor's dtype
    and shape is known before its data is made), then each tensor's data as
    it is made, so that no more than one tensor's run of rows is held."""
    order = sorted(outputs, key=lambda name: (-_DTYPE_RANK[outputs[name].dtype], name))
    header: Dict[str, Any] = {"__metadata__": SAFETENSORS_METADATA}
    offset = 0
    for name in order:
        output = outputs[name]
        nbytes = math.prod(output.shape) * inputs.SAFETENSORS_DTYPE_BYTES[output.dtype]
        header[name] = {"dtype": output.dtype, "shape": list(output.shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)
    with open(path, "wb") as handle:
        handle.write(len(encoded).to_bytes(8, "little") + encoded)
        for name in order:
            output, written = outputs[name], 0
            expected = header[name]["data_offsets"][1] - header[name]["data_offsets"][0]
            for chunk in output.chunks():
                chunk = np.ascontiguousarray(chunk)
                if chunk.itemsize != inputs.SAFETENSORS_DTYPE_BYTES[output.dtype]:
                    raise GPTQError(f"tensor {name}: {chunk.dtype} data for dtype {output.dtype}")
                handle.write(chunk.data)
                written += chunk.nbytes
            if written != expected:
                raise GPTQError(f"tensor {name}: {written} bytes of data made, its header says {expected}")


#: gptq.model's fields and the config.json fields they come from.
_HF_SIZES = {
    "dim": "hidden_size", "hidden_dim": "intermediate_size", "n_layers": "num_hidden_layers",
    "n_heads": "num_attention_heads", "n_kv_heads": "num_key_value_heads", "vocab_size": "vocab_size",
    "seq_len": "max_position_embeddings", "head_dim": "head_dim",
}


def _hf_config(text: Any, cfg: Llama2cConfig) -> Tuple[Dict[str, Any], architectures.Architecture]:
    """The config.json an import-hf module keeps in ``gptq.hf_config``: a
    JSON object of an architecture import-hf reads, whose sizes are those of
    ``gptq.model`` (the export writes it beside tensors of those sizes),
    and the architecture it describes; empty and Llama's when the attribute
    is absent."""
    if text is None:
        return {}, architectures.Architecture()
    if not isinstance(text, str):
        raise GPTQError(f"attribute {hf.CONFIG_ATTRIBUTE}: not a string")
    try:
        config = inputs.parse_json(text)
    except GPTQError as error:
        raise GPTQError(f"attribute {hf.CONFIG_ATTRIBUTE}: {error}") from None
    if not isinstance(config, dict):
        raise GPTQError(f"attribute {hf.CONFIG_ATTRIBUTE}: not a JSON object")
    # An import-gptq module keeps its checkpoint's quantization_config too.
    plain = {key: value for key, value in config.items() if key != "quantization_config"}
    sizes, arch = architectures.parse(plain, Path(f"attribute {hf.CONFIG_ATTRIBUTE}"))
    for field, key in _HF_SIZES.items():
        if getattr(sizes, field) != getattr(cfg, field):
            raise GPTQError(
                f"attribute {hf.CONFIG_ATTRIBUTE}: {key} gives {field} = {getattr(sizes, field)}, but "
                f"{emitter.MODEL_ATTRIBUTE} has {field} = {getattr(cfg, field)}"
            )
    return config, arch


def _checkpoint_outputs(model: RewrittenModel, checkpoint_format: str
                        ) -> Tuple[_Scheme, Dict[str, Any], Dict[str, _Output]]:
    """(scheme, config.json as imported, tensors by Hugging Face name) of a
    rewritten model, its layers in ``checkpoint_format``; the tensors are
    planned, not made (each is made when it is written)."""
    cfg = _model_config(model)
    scheme = _scheme(model.layers)
    names_attribute = model.attributes.get(hf.NAMES_ATTRIBUTE)
    arch = architectures.Architecture()
    if names_attribute is not None:
        names = dict(_string_dictionary(names_attribute, hf.NAMES_ATTRIBUTE))
        dtypes = _string_dictionary(model.attributes.get(hf.DTYPES_ATTRIBUTE, {}), hf.DTYPES_ATTRIBUTE)
        for name, dtype in dtypes.items():
            if dtype not in hf.FLOAT_DTYPES:
                raise GPTQError(
                    f"attribute {hf.DTYPES_ATTRIBUTE}: {inputs.shown(name)} has dtype {inputs.shown(dtype, 40)}, "
                    f"expected {', '.join(hf.FLOAT_DTYPES)}"
                )
        config, arch = _hf_config(model.attributes.get(hf.CONFIG_ATTRIBUTE), cfg)
        config = config or _llama2c_config(dataclasses.asdict(cfg), cfg.shared_classifier)
    else:
        names = hf.hf_names(cfg.n_layers, cfg.shared_classifier)
        dtypes = {}
        config = _llama2c_config(dataclasses.asdict(cfg), cfg.shared_classifier)
    names.setdefault("output", "lm_head.weight")

    # Rows of q and k features go to Hugging Face's order, unless they are
    # in it already.
    halves = _rotary_order(model) == "halves"

    def rotary_rows(name: str) -> Optional[np.ndarray]:
        return None if halves else hf.rotary_rows(cfg, name, arch)

    def check_shape(name: str, shape: Tuple[int, ...]) -> None:
        # The module's constants may have been edited apart from its sizes
        # (a vocabulary grown or cut): the checkpoint's config.json would
        # contradict its tensors.
        expected = architectures.weight_shape(cfg, name, arch)
        if expected is not None and tuple(shape) != expected:
            raise GPTQError(
                f"weight {name} ({names.get(name, name)}) has shape {list(shape)}, but the sizes of attribute "
                f"{emitter.MODEL_ATTRIBUTE} (dim {cfg.dim}, hidden_dim {cfg.hidden_dim}, vocab_size "
                f"{cfg.vocab_size}, {cfg.n_heads}/{cfg.n_kv_heads} heads) give {list(expected)}"
            )

    outputs: Dict[str, _Output] = {}
    for name, layer in model.layers.items():
        if name not in names or not names[name].endswith(".weight"):
            raise GPTQError(f"layer {name} has no Hugging Face name")
        check_shape(name, (layer.out, layer.columns))
        prefix = names[name][: -len(".weight")]
        for suffix, output in _layer_outputs(layer, scheme.bits, rotary_rows(name), checkpoint_format).items():
            outputs[f"{prefix}.{suffix}"] = output
    for name, data in model.constants.items():
        if name.startswith("freq_cis_"):
            continue  # Hugging Face computes the rotary tables from rope_theta.
        if name not in names:
            raise GPTQError(f"weight {name} has no Hugging Face name")
        check_shape(name, data.shape)
        outputs[names[name]] = _float_output(name, data, dtypes.get(name, "F32"), rotary_rows(name))
    embeddings = names.get("tok_embeddings")
    if "output" not in model.constants and "output" not in model.quantized and embeddings in outputs:
        # The tied classifier is stored too, for loaders that do not tie it
        # to the embeddings (AutoGPTQ's leaves it unset without it).
        outputs["lm_head.weight"] = outputs[embeddings]

    return scheme, config, outputs


def export_gptq(module: Union[str, os.PathLike], out_dir: Union[str, os.PathLike],
                checkpoint_format: str = CHECKPOINT_FORMAT) -> Dict[str, Any]:
    """Write the GPTQ checkpoint of the rewritten model ``module`` into
    ``out_dir`` in ``checkpoint_format`` (``gptq``, v1, or ``gptq_v2``); all
    three files appear together or none, and none may be the module or the
    parameter archive it names (checked before it is read). Returns the
    quantization_config."""
    if checkpoint_format not in CHECKPOINT_FORMATS:
        raise GPTQError(f"unknown checkpoint format {inputs.shown(checkpoint_format, 40)}, expected gptq or gptq_v2")
    module = Path(module)
    run = Run()
    run.input(module, "model")
    for archive in parameter_archives(module):
        run.input(archive, f"parameter archive of {module},")
    run.output_folder(out_dir, [hf.SINGLE_FILE, hf.CONFIG_FILE, QUANTIZE_CONFIG_FILE])
    run.check()
    model = read_rewritten_model(module)
    try:
        scheme, config, outputs = _checkpoint_outputs(model, checkpoint_format)
    except GPTQError as error:
        raise GPTQError(f"{module}: {error}") from None
    lm_head = "output" in model.quantized
    quantization = {
        "quant_method": "gptq",
        "bits": scheme.bits,
        "group_size": scheme.group_size,
        "desc_act": scheme.desc_act,
        "sym": scheme.sym,
        "checkpoint_format": checkpoint_format,
        "true_sequential": True,
        "lm_head": lm_head,
    }
    config = dict(config)
    if lm_head or "output" in model.constants:
        config["tie_word_embeddings"] = False
    config["quantization_config"] = quantization
    out = Path(out_dir)
    with run:
        try:
            _write_safetensors(outputs, run.path(out / hf.SINGLE_FILE))
        except GPTQError as error:
            raise GPTQError(f"{module}: {error}") from None
        run.path(out / hf.CONFIG_FILE).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
        run.path(out / QUANTIZE_CONFIG_FILE).write_text(json.dumps(quantization, indent=2) + "\n")
    return quantization


# Import -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Quantization:
    """What import-gptq reads of a checkpoint's quantization config:
    ``base_name`` is AutoGPTQ's ``model_file_base_name`` (the tensors'
    file without ``.safetensors``), None when not given."""

    bits: int
    group_size: int
    checkpoint_format: str
    base_name: Optional[str]


@dataclasses.dataclass
class GptqCheckpoint(hf.HfCheckpoint):
    """A GPTQ checkpoint in llama2.c's names and layout, for the emitter:
    float weights in ``weights``, quantized layers in ``quantized`` (by
    llama2.c weight name; the classifier, when quantized, as ``output``),
    and the quantization config it was read with. Read without its weights
    (``read_weights=False``), the float weights are ``references`` to the
    checkpoint's tensors and the quantized layers
    :class:`gptq_mlir.importers.emitter.QuantizedReference`s, whose tensors
    :func:`write_quantized_archive` converts one at a time."""

    quantized: Dict[str, Union[emitter.QuantizedWeight, emitter.QuantizedReference]] = dataclasses.field(
        default_factory=dict)
    quantization: Optional[Quantization] = None
    #: The checkpoint's tensors, and each quantized layer's name prefix in it.
    files: Optional[hf.TensorFiles] = None
    prefixes: Dict[str, str] = dataclasses.field(default_factory=dict)

    def quantized_weights(self) -> Dict[str, Union[emitter.QuantizedWeight, emitter.QuantizedReference]]:
        return self.quantized


def _quantization_fields(quantization: Dict[str, Any], path: Path, prefix: str) -> Quantization:
    """The fields of a quantization_config object (of config.json, or
    quantize_config.json's whole content); ``prefix`` names it in
    messages. GPTQError naming the field for what import-gptq cannot read."""
    method = quantization.get("quant_method", "gptq")
    if method != "gptq":
        raise GPTQError(f"{path}: unsupported {prefix}quant_method = {inputs.describe(method)}, expected \"gptq\"")
    checkpoint_format = quantization.get("checkpoint_format", CHECKPOINT_FORMAT)
    if checkpoint_format not in CHECKPOINT_FORMATS:
        raise GPTQError(
            f"{path}: unsupported {prefix}checkpoint_format = {inputs.describe(checkpoint_format)}, "
            f"expected {' or '.join(map(inputs.describe, CHECKPOINT_FORMATS))}"
        )
    # AutoGPTQ 0.7.1 names its Marlin repacking so, before checkpoint_format.
    if quantization.get("is_marlin_format", False) is not False:
        raise GPTQError(
            f"{path}: unsupported {prefix}is_marlin_format = {inputs.describe(quantization['is_marlin_format'])} "
            "(Marlin's packing), expected false"
        )
    bits = quantization.get("bits")
    # type(...) is int: 4.0 == 4 and True == 1 in Python, and neither is a bit width.
    if type(bits) is not int or bits not in SUPPORTED_BITS:
        raise GPTQError(f"{path}: unsupported {prefix}bits = {inputs.describe(bits)}, expected 2, 3, 4 or 8")
    group_size = quantization.get("group_size", -1)
    if type(group_size) is not int or (group_size <= 0 and group_size != -1):
        raise GPTQError(f"{path}: {prefix}group_size = {inputs.describe(group_size)}, expected -1 or an integer > 0")
    base_name = quantization.get("model_file_base_name")
    if base_name is not None and (
        not isinstance(base_name, str) or not base_name or base_name in (".", "..") or "/" in base_name
        or "\0" in base_name
    ):
        raise GPTQError(
            f"{path}: {prefix}model_file_base_name = {inputs.describe(base_name)}, expected a file name "
            "(without .safetensors) in the folder"
        )
    return Quantization(bits, group_size, checkpoint_format, base_name)


def _quantization(folder: Path, config: Dict[str, Any], config_path: Path) -> Tuple[Quantization, Path]:
    """The checkpoint's quantization config, and the file that names its
    model_file_base_name (config_path when none does): config.json's
    quantization_config (transformers reads it) and quantize_config.json
    (AutoGPTQ does; an AutoGPTQ repository may have only that file). When
    both are there they must agree; a FIFO or a link to a device in the
    place of quantize_config.json is refused."""
    found: List[Tuple[Quantization, Path, str]] = []
    quantization = config.get("quantization_config")
    if quantization is not None:
        if not isinstance(quantization, dict):
            raise GPTQError(f"{config_path}: field quantization_config is not a JSON object")
        found.append((_quantization_fields(quantization, config_path, "quantization_config."), config_path,
                      "quantization_config."))
    path = folder / QUANTIZE_CONFIG_FILE
    if os.path.lexists(path):
        content = inputs.load_json(path, "quantize config")
        if not isinstance(content, dict):
            raise GPTQError(f"{path}: expected a JSON object")
        found.append((_quantization_fields(content, path, ""), path, ""))
    if not found:
        raise GPTQError(
            f"{config_path}: missing field quantization_config, and no {QUANTIZE_CONFIG_FILE} "
            "(not a quantized checkpoint: use import-hf)"
        )
    first, first_path, first_prefix = found[0]
    for other, other_path, _ in found[1:]:
        for field in dataclasses.fields(Quantization):
            ours, theirs = getattr(first, field.name), getattr(other, field.name)
            if field.name == "base_name" and (ours is None or theirs is None):
                continue
            if ours != theirs:
                key = "model_file_base_name" if field.name == "base_name" else field.name
                raise GPTQError(
                    f"{other_path}: field {key} is {inputs.describe(theirs)}, but {first_path.name}'s "
                    f"{first_prefix}{key} is {inputs.describe(ours)}"
                )
    for other, other_path, _ in found:
        if other.base_name is not None:
            return dataclasses.replace(first, base_name=other.base_name), other_path
    return first, config_path


def _tensor_file_name(folder: Path, base_name: Optional[str], named_in: Path) -> str:
    """The name of the checkpoint's single safetensors file (or, with
    ``.index.json`` added, of its shards' index): ``base_name`` plus
    ``.safetensors`` when the quantization config names one, else the one
    index or, without an index, the one ``*.safetensors`` file in the
    folder (``model.safetensors`` when there is none, which the reader
    then reports missing). GPTQError listing them when there are several."""
    if base_name is not None:
        name = f"{base_name}.safetensors"
        if not os.path.lexists(folder / name) and not os.path.lexists(folder / f"{name}.index.json"):
            raise GPTQError(
                f"{named_in}: field model_file_base_name is {inputs.describe(base_name)}, but {folder} has "
                f"neither {name} nor {name}.index.json"
            )
        return name
    try:
        entries = sorted(os.listdir(folder))
    except OSError as error:
        raise GPTQError(f"cannot list {folder}: {error.strerror or error}") from error
    for suffix in (".safetensors.index.json", ".safetensors"):
        candidates = [name for name in entries if name.endswith(suffix)]
        if len(candidates) > 1:
            raise GPTQError(
                f"{folder}: several {'shard indexes' if 'index' in suffix else 'safetensors files'} "
                f"({inputs.shown(', '.join(candidates))}) and no model_file_base_name in "
                f"{QUANTIZE_CONFIG_FILE} to choose one"
            )
        if candidates:
            return candidates[0][: len(candidates[0]) - len(suffix)] + ".safetensors"
    return hf.SINGLE_FILE


def read_gptq_checkpoint(folder: Union[str, os.PathLike], read_weights: bool = True) -> GptqCheckpoint:
    """Read the GPTQ checkpoint in ``folder`` (``model.safetensors`` or
    shards, as :class:`gptq_mlir.importers.hf.TensorFiles` reads them, or the file
    :func:`_tensor_file_name` finds); GPTQError naming the file, tensor or
    field for what it cannot read. Without ``read_weights`` only the
    headers are read (a tied classifier stored as well is compared with the
    embeddings all the same): the float weights become references to the
    checkpoint's tensors, and a quantized layer's values are checked when
    :func:`write_quantized_archive` converts them."""
    folder = Path(folder)
    if not folder.is_dir():
        raise GPTQError(f"{folder} is not a folder")
    config_path = folder / hf.CONFIG_FILE
    config = inputs.load_json(config_path, "config")
    if not isinstance(config, dict):
        raise GPTQError(f"{config_path}: expected a JSON object")
    quantization, named_in = _quantization(folder, config, config_path)
    plain = {key: value for key, value in config.items() if key != "quantization_config"}
    cfg, arch = hf.parse_config(plain, config_path)
    single_name = _tensor_file_name(folder, quantization.base_name, named_in)
    with hf.TensorFiles(folder, single_name) as files:
        hf.check_against_tensors(cfg, files, config_path, folder)
        # A tied model's classifier may be stored as well, a copy of the
        # embeddings for loaders that do not tie them (export-gptq writes
        # one); it is checked below and read as the tied classifier.
        copied_head = cfg.shared_classifier and "lm_head.weight" in files and "lm_head.qweight" not in files
        # Otherwise the classifier is separate when lm_head is stored, quantized or not.
        separate = not copied_head and ("lm_head.weight" in files or "lm_head.qweight" in files)
        if separate and cfg.shared_classifier:
            raise GPTQError(f"{config_path}: tie_word_embeddings is true but the checkpoint stores lm_head")
        cfg = dataclasses.replace(cfg, shared_classifier=not separate)
        names = hf.hf_names(cfg.n_layers, cfg.shared_classifier, arch)
        shapes = hf.weight_shapes(cfg, arch)
        stored = set(names.values())
        weights: Dict[str, np.ndarray] = {}
        references: Dict[str, emitter.Reference] = {}
        quantized: Dict[str, Union[emitter.QuantizedWeight, emitter.QuantizedReference]] = {}
        prefixes: Dict[str, str] = {}
        dtypes: Dict[str, str] = {}
        consumed = set()
        for ours, theirs in names.items():
            prefix, shape = theirs[: -len(".weight")], shapes[ours]
            if len(shape) == 2 and f"{prefix}.qweight" in files:
                layer = _quantized_layer(files, prefix, shape, quantization)
                quantized[ours] = _read_quantized(files, prefix, layer, quantization) if read_weights else layer
                prefixes[ours] = prefix
                consumed.update(f"{prefix}.{suffix}" for suffix in QUANTIZED_TENSORS)
                bias = f"{prefix}.bias"
                # A zero bias beside a layer that has none (a quantized
                # layer's, as some writers store it); Qwen 2's are weights.
                if bias in files and bias not in stored:
                    if np.any(files.read(bias, hf.FLOAT_DTYPES, (shape[0],)) != 0):
                        raise GPTQError(f"{files.path(bias)}: tensor {bias} is not zero, and the model has no biases")
                    consumed.add(bias)
                continue
            if theirs not in files:
                alternative = f" (or {prefix}.qweight)" if len(shape) == 2 else ""
                raise GPTQError(f"{folder}: missing tensor {theirs}{alternative}")
            _, info = files.located(theirs, hf.FLOAT_DTYPES, shape)
            if read_weights:
                weights[ours] = np.ascontiguousarray(files.read_finite(theirs, shape))
            references[ours] = emitter.Reference(theirs, info.dtype, shape)
            dtypes[ours] = info.dtype
            consumed.add(theirs)
        if copied_head:
            hf.check_tied_lm_head(files, names["tok_embeddings"], shapes["tok_embeddings"])
            consumed.add(hf.LM_HEAD)
        for name in files.names():
            if name not in consumed and not hf.is_ignored(name):
                raise GPTQError(f"{files.path(name)}: unexpected tensor {inputs.shown(name)}")
    if not quantized:
        raise GPTQError(f"{folder}: no quantized layer (no tensor named *.qweight)")
    return GptqCheckpoint(
        cfg, weights, names, dtypes, config, arch, references if not read_weights else {},
        files.archive if not read_weights else None, quantized=quantized, quantization=quantization,
        files=files, prefixes=prefixes,
    )


def _quantized_layer(files: "hf.TensorFiles", prefix: str, shape: Tuple[int, int],
                     quantization: Quantization) -> emitter.QuantizedReference:
    """One quantized layer of ``shape`` (out, in), its four tensors' dtypes
    and shapes checked (their values are not read)."""
    out, columns = shape
    bits, group_size = quantization.bits, quantization.group_size
    if columns * bits % 32 or out * bits % 32:
        raise GPTQError(f"layer {prefix}: {out} x {columns} cannot be stored in {bits} bits (need multiples of 32 bits)")
    groups = 1 if group_size == -1 else -(-columns // group_size)
    for suffix, dtypes in QUANTIZED_TENSORS.items():
        name = f"{prefix}.{suffix}"
        if name not in files:
            raise GPTQError(f"{files.path(prefix + '.qweight')}: missing tensor {name}")
        files.located(name, dtypes, _checkpoint_shapes(bits, out, columns, groups)[suffix])
    # Act-order's g_idx (groups not in the inputs' order): the columns are
    # stored sorted by group, so that a decode step's kernel reads the
    # weight group by group (as gptq-opt's rewrite stores them).
    g_idx = files.read(f"{prefix}.g_idx", QUANTIZED_TENSORS["g_idx"], (columns,))
    unsorted = rows_kernel_reads_groups(bits, group_size) and bool(np.any(np.diff(g_idx.astype(np.int64)) < 0))
    return emitter.QuantizedReference(bits, out, columns, groups, sorted=unsorted)


def rows_kernel_reads_groups(bits: int, group_size: int) -> bool:
    """Whether a decode step's kernels read a weight of ``bits`` bits in
    groups of ``group_size`` columns group by group (4 bits and groups of a
    multiple of 16, 2 to 7 bits and of 32, 8 bits and of 64): only there is
    an act-order layer stored sorted by group (gptq-opt's
    rowsKernelReadsGroups)."""
    if group_size <= 0:
        return False
    if bits == 4 and group_size % 16 == 0:
        return True
    if 2 <= bits <= 7:
        return group_size % 32 == 0
    return bits == 8 and group_size % 64 == 0


def _group_order(g_idx: np.ndarray) -> np.ndarray:
    """The stable order of the columns by group (int64)."""
    return np.argsort(g_idx, kind="stable").astype(np.int64)


def _checkpoint_shapes(bits: int, out: int, columns: int, groups: int) -> Dict[str, Tuple[int, ...]]:
    """The shapes of a quantized layer's tensors in a GPTQ checkpoint."""
    return {"qweight": (columns * bits // 32, out), "qzeros": (groups, out * bits // 32), "scales": (groups, out),
            "g_idx": (columns,)}


def _read_layer_tensor(files: "hf.TensorFiles", prefix: str, layer: emitter.QuantizedReference,
                       quantization: Quantization, suffix: str) -> np.ndarray:
    """One of a quantized layer's tensors in the rewrite's layout (rows in
    the checkpoint's order: the module rotates Hugging Face's halves):
    ``qweight`` int32 [out, in * bits / 32], ``scales`` and ``zeros``
    float32 [out, groups], ``g_idx`` int32 [in]; each read and checked
    alone."""
    shapes = _checkpoint_shapes(layer.bits, layer.out, layer.columns, layer.groups)

    def read(part: str) -> np.ndarray:
        return files.read(f"{prefix}.{part}", QUANTIZED_TENSORS[part], shapes[part])

    if suffix == "perm":
        return _group_order(_read_layer_tensor(files, prefix, dataclasses.replace(layer, sorted=False),
                                               quantization, "g_idx"))
    if layer.sorted and suffix in ("qweight", "g_idx"):
        unsorted = _read_layer_tensor(files, prefix, dataclasses.replace(layer, sorted=False), quantization, suffix)
        if suffix == "g_idx":
            return np.sort(unsorted, kind="stable")
        order = _read_layer_tensor(files, prefix, layer, quantization, "perm")
        # The codes' columns in the sorted order, a run of rows at a time.
        rows = []
        for start in range(0, layer.out, 1024):
            codes = unpack_stream(unsorted[start:start + 1024], layer.columns, layer.bits)
            rows.append(pack_stream(np.ascontiguousarray(codes[:, order]), layer.bits).view(np.int32))
        return np.concatenate(rows, axis=0)
    if suffix == "qweight":
        # Each column of GPTQ's qweight is one output's codes as a bit stream
        # of 32-bit words, as each row of ours is.
        return np.ascontiguousarray(read("qweight").T)
    if suffix == "scales":
        scales = read("scales")
        if not np.all(np.isfinite(scales)):
            raise GPTQError(f"{files.path(prefix + '.scales')}: tensor {prefix}.scales holds non-finite values")
        return np.ascontiguousarray(scales.T, dtype=np.float32)
    if suffix == "zeros":
        offset = ZERO_OFFSET[quantization.checkpoint_format]
        zeros = unpack_stream(read("qzeros"), layer.out, layer.bits).T.astype(np.float32) + offset
        return np.ascontiguousarray(zeros)
    g_idx = read("g_idx").astype(np.int32)
    if g_idx.min() < 0 or g_idx.max() >= layer.groups:
        raise GPTQError(f"{files.path(prefix + '.g_idx')}: tensor {prefix}.g_idx has groups outside "
                        f"[0, {layer.groups})")
    return g_idx


def _read_quantized(files: "hf.TensorFiles", prefix: str, layer: emitter.QuantizedReference,
                    quantization: Quantization) -> emitter.QuantizedWeight:
    """One quantized layer's tensors, checked, in the rewrite's layout."""
    suffixes = ["g_idx", "scales", "qweight", "zeros"] + (["perm"] if layer.sorted else [])
    parts = {suffix: _read_layer_tensor(files, prefix, layer, quantization, suffix) for suffix in suffixes}
    return emitter.QuantizedWeight(bits=layer.bits, **parts)


def quantized_archive_path(module: Union[str, os.PathLike]) -> Path:
    """The archive of quantized layers import-gptq writes beside the module
    ``module`` (as gptq-opt names its own: ``m.mlir`` -> ``m.safetensors``)."""
    module = Path(module)
    name = module.name[: -len(".mlir")] if module.name.endswith(".mlir") else module.name
    return module.parent / f"{name}.safetensors"


def write_quantized_archive(checkpoint: GptqCheckpoint, path: Union[str, os.PathLike]) -> None:
    """Write the quantized layers of ``checkpoint`` (read without its
    weights) to the safetensors file ``path`` in the rewrite's layout, as
    ``<layer>.qweight``, ``.scales``, ``.zeros`` and ``.g_idx`` by our layer
    names (and ``.perm`` for a layer stored sorted by group): one tensor at a time, each read from the checkpoint, checked and
    converted when it is written."""
    outputs: Dict[str, _Output] = {}
    for ours, layer in checkpoint.quantized.items():
        prefix = checkpoint.prefixes[ours]
        for suffix, shape in layer.shapes().items():
            def chunks(prefix=prefix, layer=layer, suffix=suffix) -> Iterator[np.ndarray]:
                yield _read_layer_tensor(checkpoint.files, prefix, layer, checkpoint.quantization, suffix)

            dtype = {"qweight": "I32", "g_idx": "I32", "perm": "I64"}.get(suffix, "F32")
            outputs[f"{ours}.{suffix}"] = _Output(dtype, shape, chunks)
    _write_safetensors(outputs, Path(path))
