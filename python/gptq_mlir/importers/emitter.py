"""Emit a llama2.c checkpoint as an MLIR module in linalg-on-tensors form.

The module holds one function::

    func.func @forward(%tokens: tensor<?x?xi32>) -> tensor<?x?x?xf32>

mapping token ids ``[batch, seq]`` to logits ``[batch, seq, vocab]``, written
in the dialect mix torch-mlir's linalg backend produces: linalg named ops and
``linalg.generic``, tensor, arith and math, with ``cf.assert`` for the checks
of its input. Batch and sequence sizes are dynamic; the sequence must not
exceed the checkpoint's ``seq_len`` (the rotary tables have that many rows)
and every token id must lie in ``[0, vocab_size)`` (the embedding table's
rows). The function checks both before it reads anything by them, so that
``gptq-run`` reports bad input as an error naming the check (the Python
drivers check them too, before they run the model).

Activations stay ``[batch, seq, features]`` throughout: batch and sequence
are never merged into one dimension, because splitting a dynamic dimension
back into two dynamic ones (``tensor.expand_shape`` of ``?`` into ``?x?``)
crashes ``--expand-strided-metadata`` in LLVM 22.

Weights are ``dense_resource`` constants, stored exactly as in the checkpoint
(``[out, in]``, the ``nn.Linear.weight`` layout): by default in the module's
``dialect_resources`` section, as hexadecimal text; with external weights
(:func:`write_module` with ``external_weights``, ``import-llama2c
--external-weights``) in an uncompressed ``.npz`` archive beside the module,
one array per resource name, which the module names in its
``gptq.parameters`` attribute (relative to the module's folder). The archive
is written with each array's data aligned to 64 bytes, so that the tools map
the file and read the weights in place. Each linear layer is a ``linalg.generic``
contraction ``y[b, s, n] += x[b, s, k] * W[n, k]`` (loops ``(b, s, n, k)``,
the last one a reduction) of the activations with the constant weight.

Every weight constant carries its llama2.c name as its location and resource
name (``layers.0.attention.wq``, ``layers.0.feed_forward.w2``,
``tok_embeddings``, ...), and every linear layer's contraction carries the
layer's name as its location: ``layers.{i}.attention.{wq,wk,wv,wo}``,
``layers.{i}.feed_forward.{w1,w2,w3}``, and ``output`` for the classifier,
whose weight constant is ``tok_embeddings`` (shared with the embedding
lookup) unless the checkpoint has an untied classifier ``output``.
"""

import dataclasses
import io
import math
import os
import re
import struct
import zipfile
from pathlib import Path
from typing import Dict, List, Optional, Protocol, Sequence, Tuple, Union

import numpy as np

from ..files.outputs import Run
from .architectures import Architecture
from .config import Llama2cConfig

#: Module attribute holding the model's hyper-parameters, which the drivers
#: read (``seq_len`` bounds the sequence length, ``vocab_size`` the token ids).
MODEL_ATTRIBUTE = "gptq.model"

#: Module attribute naming the archive of a module's external weights.
PARAMETERS_ATTRIBUTE = "gptq.parameters"
#: The entry functions of an imported module: ``forward`` (token ids ``[B,
#: S]`` -> logits ``[B, S, V]``, the whole sequence), ``prefill`` (a
#: prompt's token ids ``[B, S]`` and the KV caches -> the logits ``[B, V]``
#: of its last position; its keys and values written to positions ``0 ..
#: S - 1`` of the caches) and ``decode`` (one token per sequence ``[B]``,
#: its position and the caches -> the logits ``[B, V]``; its key and value
#: written at that position). The caches are memrefs ``[layers, B, T, kv
#: heads, head size]`` of float32, one for keys and one for values, that the
#: caller allocates (``T`` positions at most) and the code writes in place.
ENTRIES = ("forward", "prefill", "decode")


def model_attribute(cfg: Llama2cConfig, rotary: str = "pairs") -> str:
    """The value of the ``gptq.model`` attribute: ``{dim = 64 : i64, ...}``,
    with ``rotary = "halves"`` for q and k features in Hugging Face's order."""
    fields = ("dim", "hidden_dim", "n_heads", "n_kv_heads", "n_layers", "seq_len", "vocab_size")
    if cfg.head_dim is not None:
        fields += ("head_dim",)
    entries = [f"{key} = {getattr(cfg, key)} : i64" for key in fields]
    if rotary != "pairs":
        entries.append(f'rotary = "{rotary}"')
    return "{" + ", ".join(entries) + "}"


@dataclasses.dataclass
class QuantizedWeight:
    """A linear layer's weight as a rewritten model holds it (see
    docs/model-quantization.md, "The rewritten model"): ``gptq.pack``'s
    int32 words ``[out, ceil(in * bits / 32)]``, float32 ``scales`` and
    ``zeros`` ``[out, groups]``, int32 ``g_idx`` ``[in]``."""

    bits: int
    qweight: np.ndarray
    scales: np.ndarray
    zeros: np.ndarray
    g_idx: np.ndarray
    #: int64 ``[in]`` when the columns are stored sorted by group (an
    #: act-order layer's): stored column j is input ``perm[j]``, and the
    #: layer reads its activation through ``gptq.permute`` by it.
    perm: Optional[np.ndarray] = None


@dataclasses.dataclass(frozen=True)
class QuantizedReference:
    """A quantized linear layer whose constants the module reads from a
    parameter archive (the one import-gptq writes beside it) as the tensors
    ``<name>.qweight``, ``.scales``, ``.zeros`` and ``.g_idx``, in
    :class:`QuantizedWeight`'s layout: ``out`` x ``columns`` codes of
    ``bits`` bits in ``groups`` groups."""

    bits: int
    out: int
    columns: int
    groups: int
    #: Whether its columns are stored sorted by group, with ``<name>.perm``
    #: (see :class:`QuantizedWeight`'s ``perm``).
    sorted: bool = False

    def shapes(self) -> Dict[str, Tuple[int, ...]]:
        """The shape of each of its tensors, by suffix."""
        words = -(-self.columns * self.bits // 32)
        shapes = {"qweight": (self.out, words), "scales": (self.out, self.groups),
                  "zeros": (self.out, self.groups), "g_idx": (self.columns,)}
        if self.sorted:
            shapes["perm"] = (self.columns,)
        return shapes


class Checkpoint(Protocol):
    """What the emitter reads of a checkpoint: the llama2.c reader's
    (:class:`gptq_mlir.importers.llama2c.Llama2cCheckpoint`), Hugging Face's
    (:class:`gptq_mlir.importers.hf.HfCheckpoint`) and a GPTQ checkpoint's
    (:class:`gptq_mlir.checkpoints.gptq.GptqCheckpoint`) all provide it."""

    config: Llama2cConfig
    #: float32 arrays by our (llama2.c's) name; the rotary tables among
    #: them when the architecture gives no rotary frequencies.
    weights: Dict[str, np.ndarray]
    rms_norm_eps: float
    #: What the module computes beyond llama2.c's Llama.
    architecture: Architecture

    @property
    def classifier_name(self) -> str: ...

    def module_attributes(self) -> Dict[str, str]:
        """Further module attributes, name -> MLIR attribute text."""

    def quantized_weights(self) -> Dict[str, QuantizedWeight]:
        """The weights, by name, that are quantized (emitted as
        ``gptq.unpack`` and ``gptq.dequantize`` of their constants)."""


Dim = Union[int, str]  # a static size, or the SSA name of a dynamic one


@dataclasses.dataclass(frozen=True)
class Reference:
    """A weight that the module reads from its parameter archive in place:
    the tensor ``key`` of safetensors dtype ``dtype`` (F32, F16 or BF16)
    and ``shape``."""

    key: str
    dtype: str
    shape: Tuple[int, ...]


#: The MLIR element type of each safetensors float dtype.
_ELEMENTS = {"F32": "f32", "F16": "f16", "BF16": "bf16"}
_BARE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*\Z")


def mlir_string(text: str) -> str:
    """An MLIR string literal of ``text`` (bytes other than printable ASCII,
    ``"`` and ``\\`` escaped)."""
    escaped = "".join(
        chr(byte) if 0x20 <= byte < 0x7F and chr(byte) not in '"\\' else f"\\{byte:02X}"
        for byte in text.encode()
    )
    return f'"{escaped}"'


def resource_key(name: str) -> str:
    """``name`` as a dense_resource key: bare when it is an identifier,
    else a quoted string."""
    return name if _BARE_KEY.match(name) else mlir_string(name)


def _f32(value: float) -> str:
    """An exact f32 literal (hexadecimal bit pattern)."""
    bits = np.array(value, dtype=np.float32).view(np.uint32)
    return f"0x{int(bits):08X}"


def _tensor(shape: Sequence[Dim], element: str = "f32") -> str:
    dims = "x".join("?" if isinstance(d, str) else str(d) for d in shape)
    return f"tensor<{dims}x{element}>" if dims else f"tensor<{element}>"


def _dynamic(shape: Sequence[Dim]) -> List[str]:
    return [d for d in shape if isinstance(d, str)]


def _map(rank: int, results: Sequence[int]) -> str:
    dims = ", ".join(f"d{i}" for i in range(rank))
    return f"affine_map<({dims}) -> ({', '.join(f'd{i}' for i in results)})>"


class _Value:
    """An SSA value of tensor type together with its (partly dynamic) shape."""

    def __init__(self, name: str, shape: Sequence[Dim], element: str = "f32"):
        self.name = name
        self.shape = list(shape)
        self.element = element

    @property
    def type(self) -> str:
        return _tensor(self.shape, self.element)


class _FunctionBuilder:
    """Accumulates the body of ``@forward`` as text, one op per line."""

    def __init__(self) -> None:
        self.lines: List[str] = []
        self.resources: Dict[str, np.ndarray] = {}
        self._names: Dict[str, int] = {}
        self._constants: Dict[str, _Value] = {}
        #: The permutation of each quantized weight stored sorted by group.
        self._perms: Dict[str, _Value] = {}
        self._stored: Dict[str, _Value] = {}
        self._scalars: Dict[Tuple[str, str], str] = {}

    def fresh(self, hint: str) -> str:
        count = self._names.get(hint, 0)
        self._names[hint] = count + 1
        return f"%{hint}{count}"

    def emit(self, text: str) -> None:
        self.lines.extend("    " + line for line in text.splitlines())

    def scalar(self, hint: str, literal: str, type_: str) -> str:
        """A scalar constant, emitted once: the blocks that ask for the same
        one (each layer's soft cap or window) share it."""
        key = (literal, type_)
        if key not in self._scalars:
            self._scalars[key] = self.fresh(hint)
            self.emit(f"{self._scalars[key]} = arith.constant {literal} : {type_}")
        return self._scalars[key]

    def weight(self, name: str, array: np.ndarray) -> _Value:
        """The dense_resource constant for a named weight (emitted once)."""
        if name not in self._constants:
            ssa = self.fresh("w")
            value = _Value(ssa, array.shape)
            self.emit(
                f'{ssa} = arith.constant dense_resource<{name}> : {value.type} loc("{name}")'
            )
            self.resources[name] = np.ascontiguousarray(array, dtype="<f4")
            self._constants[name] = value
        return self._constants[name]

    def reference(self, name: str, ref: "Reference") -> _Value:
        """The float32 value of the weight ``name`` that the parameter
        archive holds as tensor ``ref.key`` (emitted once): its
        dense_resource in the stored element type, widened by an
        ``arith.extf`` when that is not f32 (the quantization pass takes the
        widening for the layer's weight)."""
        if name not in self._constants:
            stored = self.stored(name, ref)
            value = stored
            if stored.element != "f32":
                value = _Value(self.fresh("w"), ref.shape)
                self.emit(f'{value.name} = arith.extf {stored.name} : {stored.type} to {value.type} loc("{name}")')
            self._constants[name] = value
        return self._constants[name]

    def stored(self, name: str, ref: "Reference") -> _Value:
        """The dense_resource of tensor ``ref.key`` as stored (emitted once
        per name)."""
        if name not in self._stored:
            value = _Value(self.fresh("w"), ref.shape, _ELEMENTS[ref.dtype])
            self.emit(
                f'{value.name} = arith.constant dense_resource<{resource_key(ref.key)}> : {value.type} loc("{name}")'
            )
            self._stored[name] = value
        return self._stored[name]

    def quantized(self, name: str, weight: Union[QuantizedWeight, QuantizedReference]) -> _Value:
        """The float weight ``name`` from its quantized form (emitted once):
        the constants ``<name>.qweight``, ``.scales``, ``.zeros``, ``.g_idx``,
        then ``gptq.unpack`` and ``gptq.dequantize``, as gptq-opt's rewrite
        writes them. A :class:`QuantizedReference`'s constants are read from
        the parameter archive, a :class:`QuantizedWeight`'s are resources of
        the module."""
        if name not in self._constants:
            parts = {}
            referenced = isinstance(weight, QuantizedReference)
            suffixes = ["qweight", "scales", "zeros", "g_idx"]
            if (weight.sorted if referenced else weight.perm is not None):
                suffixes.append("perm")
            shapes = weight.shapes() if referenced else {
                suffix: getattr(weight, suffix).shape for suffix in suffixes}
            for suffix in suffixes:
                element = {"qweight": "i32", "g_idx": "i32", "perm": "i64"}.get(suffix, "f32")
                value = _Value(self.fresh("q"), shapes[suffix], element)
                self.emit(
                    f'{value.name} = arith.constant dense_resource<{name}.{suffix}> : {value.type} loc("{name}")'
                )
                if not referenced:
                    self.resources[f"{name}.{suffix}"] = np.ascontiguousarray(
                        getattr(weight, suffix), dtype={"i32": "<i4", "i64": "<i8"}.get(element, "<f4")
                    )
                parts[suffix] = value
            if "perm" in parts:
                self._perms[name] = parts["perm"]
            out, columns = shapes["qweight"][0], shapes["g_idx"][0]
            count = self.scalar("columns", str(columns), "index")
            codes = self.fresh("codes")
            codes_type = _tensor([out, columns], "i8")
            self.emit(
                f"{codes} = gptq.unpack {parts['qweight'].name} columns {count} bits {weight.bits} : "
                f"{parts['qweight'].type} -> {codes_type}"
            )
            result = _Value(self.fresh("w"), [out, columns])
            self.emit(
                f"{result.name} = gptq.dequantize {codes}, {parts['scales'].name}, {parts['zeros'].name}, "
                f"{parts['g_idx'].name} : {codes_type}, {parts['scales'].type}, {parts['g_idx'].type} "
                f'-> {result.type} loc("{name}")'
            )
            self._constants[name] = result
        return self._constants[name]

    def permuted_input(self, x: _Value, name: str) -> _Value:
        """``x`` with its last dimension permuted as quantized weight
        ``name``'s columns are stored (``gptq.permute`` by ``<name>.perm``),
        or ``x`` itself when they are in the inputs' order."""
        perm = self._perms.get(name)
        if perm is None:
            return x
        result = _Value(self.fresh("xp"), x.shape)
        self.emit(f"{result.name} = gptq.permute {x.name} by {perm.name} dims [{len(x.shape) - 1}] : "
                  f'{x.type}, {perm.type} loc("{name}")')
        return result

    def empty(self, shape: Sequence[Dim], element: str = "f32") -> _Value:
        name = self.fresh("empty")
        self.emit(f"{name} = tensor.empty({', '.join(_dynamic(shape))}) : {_tensor(shape, element)}")
        return _Value(name, shape, element)

    def filled(self, shape: Sequence[Dim], scalar: str) -> _Value:
        init = self.empty(shape)
        name = self.fresh("fill")
        self.emit(
            f"{name} = linalg.fill ins({scalar} : f32) outs({init.name} : {init.type}) -> {init.type}"
        )
        return _Value(name, shape)

    def generic(
        self,
        inputs: Sequence[Tuple[_Value, Sequence[int]]],
        output: _Value,
        output_map: Sequence[int],
        iterators: Sequence[str],
        body: str,
        block_args: Sequence[str],
        hint: str,
        loc: Optional[str] = None,
    ) -> _Value:
        """A linalg.generic; ``body`` may use ``block_args`` and must yield.

        ``loc``, when given, becomes the op's location."""
        rank = len(iterators)
        maps = [_map(rank, m) for _, m in inputs] + [_map(rank, output_map)]
        iterator_list = ", ".join(f'"{kind}"' for kind in iterators)
        ins = ", ".join(v.name for v, _ in inputs)
        in_types = ", ".join(v.type for v, _ in inputs)
        elements = [v.element for v, _ in inputs] + [output.element]
        args = ", ".join(f"{a}: {t}" for a, t in zip(block_args, elements))
        name = self.fresh(hint)
        ins_clause = f" ins({ins} : {in_types})" if inputs else ""
        self.emit(
            f"{name} = linalg.generic {{indexing_maps = [{', '.join(maps)}], "
            f"iterator_types = [{iterator_list}]}}{ins_clause} "
            f"outs({output.name} : {output.type}) {{\n"
            f"^bb0({args}):\n"
            + "\n".join("  " + line.strip() for line in body.strip().splitlines())
            + f"\n}} -> {output.type}"
            + (f' loc("{loc}")' if loc else "")
        )
        return _Value(name, output.shape, output.element)

    def reshape(self, op: str, source: _Value, reassociation: Sequence[Sequence[int]], shape: Sequence[Dim]) -> _Value:
        """A tensor.expand_shape or tensor.collapse_shape to ``shape``."""
        name = self.fresh("expanded" if op == "expand" else "collapsed")
        groups = ", ".join("[" + ", ".join(str(i) for i in g) + "]" for g in reassociation)
        result = _Value(name, shape, source.element)
        if op == "expand":
            sizes = ", ".join(str(d) for d in shape)
            self.emit(
                f"{name} = tensor.expand_shape {source.name} [{groups}] output_shape [{sizes}] "
                f": {source.type} into {result.type}"
            )
        else:
            self.emit(f"{name} = tensor.collapse_shape {source.name} [{groups}] : {source.type} into {result.type}")
        return result

    def slice(self, source: _Value, offsets: Sequence[Dim], sizes: Sequence[Dim], shape: Sequence[Dim]) -> _Value:
        """A unit-stride tensor.extract_slice, rank-reduced to ``shape``."""
        name = self.fresh("slice")
        result = _Value(name, shape, source.element)
        strides = ", ".join("1" for _ in sizes)
        self.emit(
            f"{name} = tensor.extract_slice {source.name}[{', '.join(map(str, offsets))}] "
            f"[{', '.join(map(str, sizes))}] [{strides}] : {source.type} to {result.type}"
        )
        return result


class _LlamaEmitter:
    """Builds one entry function of one checkpoint (``mode``: ``forward``,
    ``prefill`` or ``decode``, see :data:`ENTRIES`), or the module of all."""

    def __init__(
        self,
        checkpoint: Checkpoint,
        references: Optional[Dict[str, Reference]] = None,
        mode: str = "forward",
    ):
        self.ckpt = checkpoint
        self.cfg = checkpoint.config
        self.arch: Architecture = checkpoint.architecture
        self.b = _FunctionBuilder()
        self.quantized = checkpoint.quantized_weights()
        #: Weights read in place from the parameter archive, by our name.
        self.references = references or {}
        #: The order of each head's q and k features (see gptq.model).
        self.rotary_order = getattr(checkpoint, "rotary", "pairs")
        self.mode = mode
        # Dynamic sizes, defined by tensor.dim at the top of the function:
        # the batch, the positions computed (one in a decode step), the
        # first of them (a value in a decode step), and the positions that
        # attention reads (those before and these).
        self.batch = "%batch"
        self.seq: Dim = 1 if mode == "decode" else "%seq"
        self.start: Dim = "%start" if mode == "decode" else 0
        self.keys: Dim = "%keys" if mode == "decode" else self.seq
        #: The KV caches as they stand after the layers emitted so far.
        self.caches: Optional[List[_Value]] = None

    # Building blocks -----------------------------------------------------

    def _constants(self) -> None:
        b, arch = self.b, self.arch
        self.c0 = b.scalar("c", "0", "index")
        self.c1 = b.scalar("c", "1", "index")
        self.zero = b.scalar("cst", _f32(0.0), "f32")
        self.neg_inf = b.scalar("cst", "0xFF800000", "f32")
        self.one = b.scalar("cst", _f32(1.0), "f32")
        self.eps = b.scalar("cst", _f32(self.ckpt.rms_norm_eps), "f32")
        self.width = b.scalar("cst", _f32(float(self.cfg.dim)), "f32")
        scale = arch.query_scale if arch.query_scale is not None else 1.0 / np.sqrt(self.cfg.head_size)
        self.scale = b.scalar("cst", _f32(scale), "f32")

    def _weight(self, name: str) -> _Value:
        quantized = self.quantized.get(name)
        if quantized is not None:
            return self.b.quantized(name, quantized)
        if name in self.references:
            return self.b.reference(name, self.references[name])
        return self.b.weight(name, self.ckpt.weights[name])

    def check_tokens(self, tokens: _Value) -> None:
        """Assert that ``tokens`` index the embedding table and the rotary tables.

        One reduction over the ids (unsigned comparison, so negative ids fail
        too) and one comparison of the sequence length."""
        b, cfg = self.b, self.cfg
        vocab = b.scalar("vocab", str(cfg.vocab_size), "i32")
        true = b.fresh("true")
        b.emit(f"{true} = arith.constant true")
        init = b.empty([], "i1")
        all_true = b.fresh("fill")
        b.emit(f"{all_true} = linalg.fill ins({true} : i1) outs({init.name} : {init.type}) -> {init.type}")
        in_range = b.generic(
            [(tokens, [0, 1])],
            _Value(all_true, [], "i1"),
            [],
            ["reduction", "reduction"],
            f"""
            %in = arith.cmpi ult, %tok, {vocab} : i32
            %all = arith.andi %acc, %in : i1
            linalg.yield %all : i1
            """,
            ["%tok", "%acc"],
            "ids_ok",
        )
        ids_ok = b.fresh("ids_ok")
        b.emit(f"{ids_ok} = tensor.extract {in_range.name}[] : {in_range.type}")
        b.emit(f'cf.assert {ids_ok}, "{self.mode}: token id out of range [0, vocab_size = {cfg.vocab_size})"')
        if self.mode == "decode":
            return  # one token, at a position checked against seq_len
        seq_len = b.scalar("seq_len", str(cfg.seq_len), "index")
        seq_ok = b.fresh("seq_ok")
        b.emit(f"{seq_ok} = arith.cmpi ule, {self.seq}, {seq_len} : index")
        b.emit(f"cf.assert {seq_ok}, \"{self.mode}: sequence longer than the model's seq_len = {cfg.seq_len}\"")

    def embed(self, tokens: _Value) -> _Value:
        """Gather rows of ``tok_embeddings``: ``[B, S] i32 -> [B, S, dim]``,
        times the architecture's embedding scale when it has one."""
        ref = self.references.get("tok_embeddings")
        widen = ""
        if ref is not None and ref.dtype != "F32":
            # Rows are widened as they are gathered, not the whole table.
            table = self.b.stored("tok_embeddings", ref)
            widen = f"\n%row = arith.extf %raw : {table.element} to f32"
        else:
            table = self._weight("tok_embeddings")
        out = self.b.empty([self.batch, self.seq, self.cfg.dim])
        scaled = "%row"
        scaling = ""
        if self.arch.embed_scale is not None:
            factor = self.b.scalar("cst", _f32(self.arch.embed_scale), "f32")
            scaled, scaling = "%scaled", f"\n%scaled = arith.mulf %row, {factor} : f32"
        return self.b.generic(
            [(tokens, [0, 1])],
            out,
            [0, 1, 2],
            ["parallel"] * 3,
            f"""
            %id = arith.index_cast %tok : i32 to index
            %col = linalg.index 2 : index
            {"%raw" if widen else "%row"} = tensor.extract {table.name}[%id, %col] : {table.type}{widen}{scaling}
            linalg.yield {scaled} : f32
            """,
            ["%tok", "%out"],
            "embed",
        )

    def rmsnorm(self, x: _Value, weight_name: str) -> _Value:
        """``x * rsqrt(mean(x^2) + eps) * weight`` over the last dimension
        (``* (1 + weight)`` for architectures whose norms are offset)."""
        weight = self._weight(weight_name)
        rank = len(x.shape)
        width = self.width
        if x.shape[-1] != self.cfg.dim:
            width = self.b.scalar("cst", _f32(float(x.shape[-1])), "f32")
        sums = self.b.generic(
            [(x, list(range(rank)))],
            self.b.filled(x.shape[:-1], self.zero),
            list(range(rank - 1)),
            ["parallel"] * (rank - 1) + ["reduction"],
            """
            %sq = arith.mulf %a, %a : f32
            %sum = arith.addf %acc, %sq : f32
            linalg.yield %sum : f32
            """,
            ["%a", "%acc"],
            "sumsq",
        )
        gain = "%g"
        offset = ""
        if self.arch.norm_offset:
            gain, offset = "%gain", f"\n%gain = arith.addf %g, {self.one} : f32"
        return self.b.generic(
            [(x, list(range(rank))), (sums, list(range(rank - 1))), (weight, [rank - 1])],
            self.b.empty(x.shape),
            list(range(rank)),
            ["parallel"] * rank,
            f"""
            %mean = arith.divf %s, {width} : f32
            %shifted = arith.addf %mean, {self.eps} : f32
            %inv = math.rsqrt %shifted : f32
            %normed = arith.mulf %a, %inv : f32{offset}
            %scaled = arith.mulf %normed, {gain} : f32
            linalg.yield %scaled : f32
            """,
            ["%a", "%s", "%g", "%out"],
            "rmsnorm",
        )

    def norm(self, x: _Value, weight_name: str) -> _Value:
        """A block's input norm or the final norm: :meth:`layernorm` for
        architectures whose norms are LayerNorms, else :meth:`rmsnorm`."""
        return self.layernorm(x, weight_name) if self.arch.layer_norm else self.rmsnorm(x, weight_name)

    def layernorm(self, x: _Value, weight_name: str) -> _Value:
        """torch's LayerNorm over the last dimension: ``(x - mean) *
        rsqrt(var + eps) * weight + bias``, the variance the biased one
        (over ``dim``), the bias ``<weight_name>_bias``."""
        weight = self._weight(weight_name)
        bias = self._weight(f"{weight_name}_bias")
        rank = len(x.shape)
        every, rows = list(range(rank)), list(range(rank - 1))
        reduce = ["parallel"] * (rank - 1) + ["reduction"]
        sums = self.b.generic(
            [(x, every)], self.b.filled(x.shape[:-1], self.zero), rows, reduce,
            """
            %sum = arith.addf %acc, %a : f32
            linalg.yield %sum : f32
            """,
            ["%a", "%acc"], "sum",
        )
        centered = f"""
            %mean = arith.divf %s, {self.width} : f32
            %c = arith.subf %a, %mean : f32
        """
        squares = self.b.generic(
            [(x, every), (sums, rows)], self.b.filled(x.shape[:-1], self.zero), rows, reduce,
            centered + """
            %sq = arith.mulf %c, %c : f32
            %sum = arith.addf %acc, %sq : f32
            linalg.yield %sum : f32
            """,
            ["%a", "%s", "%acc"], "sumsq",
        )
        return self.b.generic(
            [(x, every), (sums, rows), (squares, rows), (weight, [rank - 1]), (bias, [rank - 1])],
            self.b.empty(x.shape), every, ["parallel"] * rank,
            centered + f"""
            %var = arith.divf %v, {self.width} : f32
            %shifted = arith.addf %var, {self.eps} : f32
            %inv = math.rsqrt %shifted : f32
            %normed = arith.mulf %c, %inv : f32
            %scaled = arith.mulf %normed, %g : f32
            %shift = arith.addf %scaled, %beta : f32
            linalg.yield %shift : f32
            """,
            ["%a", "%s", "%v", "%g", "%beta", "%out"], "layernorm",
        )

    def linear(self, x: _Value, weight_name: str, layer_name: Optional[str] = None) -> _Value:
        """``y[..., n] = sum_k x[..., k] * W[n, k]`` for a constant ``W[out, in]``
        (``x`` ``[B, S, in]``, or an expert's rows ``[T, in]``).

        The contraction carries the layer's name (``layer_name``, by default
        the weight's) as its location.
        """
        weight = self._weight(weight_name)
        x = self.b.permuted_input(x, weight_name)
        rank = len(x.shape)
        return self._contract(
            (x, list(range(rank - 1)) + [rank]),
            (weight, [rank - 1, rank]),
            list(x.shape[:-1]) + [weight.shape[0]],
            "linear",
            layer_name or weight_name,
        )

    def add_bias(self, y: _Value, bias_name: str) -> _Value:
        """``y[b, s, n] + bias[n]``: a linear layer's bias, kept float."""
        return self.add(y, self._weight(bias_name), [2], "bias")

    def _contract(
        self,
        lhs: Tuple[_Value, List[int]],
        rhs: Tuple[_Value, List[int]],
        out_shape: List[Dim],
        label: str,
        loc: Optional[str] = None,
    ) -> _Value:
        """``out = sum over the last loop of lhs * rhs``: a linalg.generic whose
        loops are the output's dimensions followed by one reduction, over a
        zero-filled output; ``lhs`` and ``rhs`` pair a value with the loops
        indexing its dimensions; ``loc`` is the op's location."""
        rank = len(out_shape)
        return self.b.generic(
            [lhs, rhs],
            self.b.filled(out_shape, self.zero),
            list(range(rank)),
            ["parallel"] * rank + ["reduction"],
            """
            %prod = arith.mulf %lhs, %rhs : f32
            %sum = arith.addf %acc, %prod : f32
            linalg.yield %sum : f32
            """,
            ["%lhs", "%rhs", "%acc"],
            label,
            loc,
        )

    def add(self, x: _Value, y: _Value, y_dims: Sequence[int] = (0, 1, 2), label: str = "residual") -> _Value:
        """``x + y`` for ``x: [B, S, d]`` and ``y`` indexed by the loops
        ``y_dims``: the residual connection (``y`` of ``x``'s shape), or a
        bias (``y: [d]``, loop 2)."""
        return self.b.generic(
            [(x, [0, 1, 2]), (y, list(y_dims))],
            self.b.empty(x.shape),
            [0, 1, 2],
            ["parallel"] * 3,
            """
            %sum = arith.addf %a, %b : f32
            linalg.yield %sum : f32
            """,
            ["%a", "%b", "%out"],
            label,
        )

    def features(self, x: _Value, start: int, size: int) -> _Value:
        """``x[:, :, start:start + size]`` of a ``[B, S, d]`` tensor (a part
        of a fused layer's output)."""
        return self.b.slice(x, [0, 0, start], [self.batch, self.seq, size], [self.batch, self.seq, size])

    def heads(self, x: _Value, heads: Sequence[int]) -> _Value:
        """``[B, S, prod(heads) * hs]`` viewed as ``[B, S, *heads, hs]``."""
        rank = 3 + len(heads)
        return self.b.reshape(
            "expand", x, [[0], [1], list(range(2, rank))], [self.batch, self.seq, *heads, self.cfg.head_size]
        )

    # Rotary embedding ----------------------------------------------------

    def rope_angles(self) -> None:
        """The cos and sin of every position's rotary angles, ``[S, hs / 2]``,
        for architectures that give frequencies: ``angle[s, i] = float(s) *
        inv_freq[i]`` in float32, as transformers computes them; with dynamic
        scaling, frequencies recomputed from the sequence's length when it
        exceeds the original context; with LongRoPE, the short or long
        frequencies and the cos and sin times the short or long mscale, by
        the sequence's length (:meth:`long_frequencies`). llama2.c modules
        read their stored tables instead (:meth:`rope_tables`)."""
        b, arch = self.b, self.arch
        half = self.cfg.head_size // 2
        frequencies = arch.frequencies(self.cfg.head_size).astype("<f4")
        freqs = _Value(b.fresh("inv_freq"), [half])
        b.emit(f'{freqs.name} = arith.constant dense<"0x{frequencies.tobytes().hex().upper()}"> : {freqs.type}')
        mscale = ""
        if arch.dynamic_rope is not None:
            freqs = self.dynamic_frequencies(freqs)
        elif arch.long_rope is not None:
            freqs, factor = self.long_frequencies(freqs)
            mscale = f"\n%v = arith.mulf %raw, {factor} : f32"
        position = "%pos = linalg.index 0 : index"
        if self.start != 0:
            position = f"%row = linalg.index 0 : index\n%pos = arith.addi %row, {self.start} : index"
        tables = []
        for fn in ("cos", "sin"):
            tables.append(b.generic(
                [(freqs, [1])],
                b.empty([self.seq, half]),
                [0, 1],
                ["parallel", "parallel"],
                f"""
                {position}
                %pos_i = arith.index_cast %pos : index to i64
                %pos_f = arith.sitofp %pos_i : i64 to f32
                %angle = arith.mulf %pos_f, %f : f32
                {"%raw" if mscale else "%v"} = math.{fn} %angle : f32{mscale}
                linalg.yield %v : f32
                """,
                ["%f", "%out"],
                fn,
            ))
        self.angles = tuple(tables)

    def dynamic_frequencies(self, freqs: _Value) -> _Value:
        """Dynamic NTK scaling: for ``S > max_positions`` the frequencies
        ``1 / base ** (2i / d)`` with ``base = theta * (factor * S /
        max_positions - (factor - 1)) ** (d / (d - 2))``, in float32 in
        transformers' order of operations; ``freqs`` otherwise."""
        b, rope = self.b, self.arch.dynamic_rope
        d = self.cfg.head_size
        half = d // 2
        exponents = (np.arange(0, d, 2, dtype=np.float32) / np.float32(d)).astype("<f4")
        expo = _Value(b.fresh("rope_exp"), [half])
        b.emit(f'{expo.name} = arith.constant dense<"0x{exponents.tobytes().hex().upper()}"> : {expo.type}')
        factor = b.scalar("cst", _f32(rope.factor), "f32")
        positions = b.scalar("cst", _f32(float(rope.max_positions)), "f32")
        shift = b.scalar("cst", _f32(rope.factor - 1), "f32")
        power = b.scalar("cst", _f32(d / (d - 2)), "f32")
        theta = b.scalar("cst", _f32(rope.theta), "f32")
        limit = b.scalar("max_pos", str(rope.max_positions), "index")
        longer = b.fresh("longer")
        # The length of the sequence so far, as transformers takes it.
        b.emit(f"{longer} = arith.cmpi ugt, {self.keys}, {limit} : index")
        seq_i = b.fresh("seq_i")
        b.emit(f"{seq_i} = arith.index_cast {self.keys} : index to i64")
        seq_f = b.fresh("seq_f")
        b.emit(f"{seq_f} = arith.sitofp {seq_i} : i64 to f32")
        return b.generic(
            [(freqs, [0]), (expo, [0])],
            b.empty([half]),
            [0],
            ["parallel"],
            f"""
            %scaled = arith.mulf {factor}, {seq_f} : f32
            %ratio = arith.divf %scaled, {positions} : f32
            %shifted = arith.subf %ratio, {shift} : f32
            %grown = math.powf %shifted, {power} : f32
            %base = arith.mulf {theta}, %grown : f32
            %p = math.powf %base, %e : f32
            %inv = arith.divf {self.one}, %p : f32
            %picked = arith.select {longer}, %inv, %f : f32
            linalg.yield %picked : f32
            """,
            ["%f", "%e", "%out"],
            "ntk",
        )

    def long_frequencies(self, short: _Value) -> Tuple[_Value, str]:
        """LongRoPE (:class:`gptq_mlir.importers.architectures.LongRope`): the
        frequencies ``short`` or, for a sequence long enough, the long
        ones; and the scale of the cos and sin (an f32 SSA value), chosen
        by the length of the sequence so far as transformers takes it."""
        b, rope = self.b, self.arch.long_rope
        short_scale = b.scalar("cst", _f32(rope.short_mscale), "f32")
        long_scale = b.scalar("cst", _f32(rope.long_mscale), "f32")
        context = b.scalar("ctx", str(rope.mscale_context), "index")
        past = b.fresh("past")
        b.emit(f"{past} = arith.cmpi ugt, {self.keys}, {context} : index")
        scale = b.fresh("mscale")
        b.emit(f"{scale} = arith.select {past}, {long_scale}, {short_scale} : f32")
        if not rope.reaches_long:
            return short, scale
        half = self.cfg.head_size // 2
        frequencies = rope.frequencies(self.arch.rope_theta, self.cfg.head_size, long=True).astype("<f4")
        long = _Value(b.fresh("inv_freq"), [half])
        b.emit(f'{long.name} = arith.constant dense<"0x{frequencies.tobytes().hex().upper()}"> : {long.type}')
        context = b.scalar("ctx", str(rope.factor_context), "index")
        reach = b.fresh("reach")
        b.emit(f"{reach} = arith.cmpi uge, {self.keys}, {context} : index")
        picked = b.generic(
            [(short, [0]), (long, [0])], b.empty([half]), [0], ["parallel"],
            f"""
            %picked = arith.select {reach}, %l, %s : f32
            linalg.yield %picked : f32
            """,
            ["%s", "%l", "%out"], "longrope",
        )
        return picked, scale

    def rope_tables(self) -> Tuple[_Value, _Value]:
        """The cos and sin ``[S, hs / 2]`` that rotate positions ``0..S-1``."""
        if self.arch.rope_theta is not None:
            return self.angles
        half = self.cfg.head_size // 2
        cos = self.b.slice(self.cos, [self.start, 0], [self.seq, half], [self.seq, half])
        sin = self.b.slice(self.sin, [self.start, 0], [self.seq, half], [self.seq, half])
        return cos, sin

    def rotary(self, x: _Value, heads: Sequence[int]) -> _Value:
        """Rotate the feature pairs of each head of ``x``: ``[B, S,
        prod(heads) * hs]``, or ``[B, S, *heads, hs]`` already split. The
        pairs are (even, odd) features in llama2.c's order (``rotary`` "pairs")
        and (``i``, ``i + hs / 2``) in Hugging Face's ("halves").

        Returns ``[B, S, *heads, hs]``.
        """
        half = self.cfg.head_size // 2
        halves = self.rotary_order == "halves"
        # The pair's member (0 real, 1 imaginary) and the frequency index.
        pairs_shape = [self.batch, self.seq, *heads] + ([2, half] if halves else [half, 2])
        rank = len(pairs_shape)
        which_dim, freq_dim = (rank - 2, rank - 1) if halves else (rank - 1, rank - 2)
        if len(x.shape) == 3:
            groups = [[0], [1], list(range(2, rank))]
        else:
            groups = [[i] for i in range(rank - 2)] + [[rank - 2, rank - 1]]
        pairs = self.b.reshape("expand", x, groups, pairs_shape)
        part_shape = [d for i, d in enumerate(pairs_shape) if i != which_dim]
        sizes = [1 if i == which_dim else d for i, d in enumerate(pairs_shape)]
        imag_at = [1 if i == which_dim else 0 for i in range(rank)]
        real = self.b.slice(pairs, [0] * rank, sizes, part_shape)
        imag = self.b.slice(pairs, imag_at, sizes, part_shape)
        cos, sin = self.rope_tables()
        part_map = [i for i in range(rank) if i != which_dim]
        table_map = [1, freq_dim]
        rotated = self.b.generic(
            [(real, part_map), (imag, part_map), (cos, table_map), (sin, table_map)],
            self.b.empty(pairs_shape),
            list(range(rank)),
            ["parallel"] * rank,
            f"""
            %which = linalg.index {which_dim} : index
            %is_real = arith.cmpi eq, %which, {self.c0} : index
            %rc = arith.mulf %re, %cos : f32
            %is = arith.mulf %im, %sin : f32
            %new_re = arith.subf %rc, %is : f32
            %rs = arith.mulf %re, %sin : f32
            %ic = arith.mulf %im, %cos : f32
            %new_im = arith.addf %rs, %ic : f32
            %picked = arith.select %is_real, %new_re, %new_im : f32
            linalg.yield %picked : f32
            """,
            ["%re", "%im", "%cos", "%sin", "%out"],
            "rope",
        )
        return self.b.reshape(
            "collapse",
            rotated,
            [[i] for i in range(rank - 2)] + [[rank - 2, rank - 1]],
            pairs_shape[:-2] + [self.cfg.head_size],
        )

    # Attention and feed-forward --------------------------------------------

    def attention(
        self, q: _Value, k: _Value, v: _Value, window: Optional[int] = None, kv_major: bool = False
    ) -> _Value:
        """Causal grouped-query attention.

        ``q: [B, S, KV, G, hs]``, ``k, v: [B, T, KV, hs]``, or ``[B, KV, T,
        hs]`` with ``kv_major`` (the KV caches' layout) (query head
        ``kv * G + g`` reads key/value head ``kv``; the queries are positions
        ``start .. start + S - 1`` of the keys' ``0 .. T - 1``); returns
        ``[B, S, H * hs]``. Position ``p`` sees the keys ``t <= p``; with
        ``window``, only ``p - window < t <= p``;
        scores are soft-capped (``cap * tanh(score / cap)``) when the
        architecture caps them.
        """
        b, cfg, arch = self.b, self.cfg, self.arch
        groups = cfg.n_heads // cfg.n_kv_heads
        kv, hs = cfg.n_kv_heads, cfg.head_size
        scores_shape = [self.batch, kv, groups, self.seq, self.keys]
        # Loops (b, kv, g, s, t, d): scores[b, kv, g, s, t] = q[b, s, kv, g, :] . k[b, t, kv, :]
        k_map = [0, 1, 4, 5] if kv_major else [0, 4, 1, 5]
        scores = self._contract((q, [0, 3, 1, 2, 5]), (k, k_map), scores_shape, "scores")
        query = "%s = linalg.index 3 : index"
        if self.start != 0:
            query = f"%row = linalg.index 3 : index\n%s = arith.addi %row, {self.start} : index"
        causal = f"""
            {query}
            %t = linalg.index 4 : index
            %visible = arith.cmpi ule, %t, %s : index
            %scaled = arith.mulf %a, {self.scale} : f32
        """
        if window is not None:
            width = b.scalar("window", str(window), "index")
            causal = causal.replace("%visible = ", "%causal = ") + f"""
            %reach = arith.addi %t, {width} : index
            %near = arith.cmpi ugt, %reach, %s : index
            %visible = arith.andi %causal, %near : i1
            """
        if arch.attn_softcap is not None:
            cap = b.scalar("cst", _f32(arch.attn_softcap), "f32")
            causal = causal.replace("%scaled = ", "%raw = ") + f"""
            %shrunk = arith.divf %raw, {cap} : f32
            %bent = math.tanh %shrunk : f32
            %scaled = arith.mulf %bent, {cap} : f32
            """
        row_shape = scores_shape[:-1]
        row_map = [0, 1, 2, 3]
        full_map = [0, 1, 2, 3, 4]
        row_max = b.generic(
            [(scores, full_map)],
            b.filled(row_shape, self.neg_inf),
            row_map,
            ["parallel"] * 4 + ["reduction"],
            causal
            + f"""
            %masked = arith.select %visible, %scaled, {self.neg_inf} : f32
            %max = arith.maximumf %acc, %masked : f32
            linalg.yield %max : f32
            """,
            ["%a", "%acc"],
            "rowmax",
        )
        exps = b.generic(
            [(scores, full_map), (row_max, row_map)],
            b.empty(scores_shape),
            full_map,
            ["parallel"] * 5,
            causal
            + f"""
            %centered = arith.subf %scaled, %m : f32
            %e = math.exp %centered : f32
            %p = arith.select %visible, %e, {self.zero} : f32
            linalg.yield %p : f32
            """,
            ["%a", "%m", "%out"],
            "exp",
        )
        row_sum = b.generic(
            [(exps, full_map)],
            b.filled(row_shape, self.zero),
            row_map,
            ["parallel"] * 4 + ["reduction"],
            """
            %sum = arith.addf %acc, %e : f32
            linalg.yield %sum : f32
            """,
            ["%e", "%acc"],
            "rowsum",
        )
        probs = b.generic(
            [(exps, full_map), (row_sum, row_map)],
            b.empty(scores_shape),
            full_map,
            ["parallel"] * 5,
            """
            %p = arith.divf %e, %z : f32
            linalg.yield %p : f32
            """,
            ["%e", "%z", "%out"],
            "softmax",
        )
        # Loops (b, s, kv, g, d, t): out[b, s, kv, g, d] = probs[b, kv, g, s, :] . v[b, :, kv, d]
        out_shape = [self.batch, self.seq, kv, groups, hs]
        v_map = [0, 2, 5, 4] if kv_major else [0, 5, 2, 4]
        mixed = self._contract((probs, [0, 2, 3, 1, 5]), (v, v_map), out_shape, "attn")
        return b.reshape("collapse", mixed, [[0], [1], [2, 3, 4]], [self.batch, self.seq, cfg.q_dim])

    def feed_forward(self, x: _Value, prefix: str) -> _Value:
        """SwiGLU ``w2(silu(w1 x) * w3 x)``, or GeGLU with the tanh GELU;
        ``w1`` and ``w3`` as the halves of one fused ``w13`` for
        architectures that fuse them."""
        if self.arch.fused:
            both = self.linear(x, f"{prefix}.w13")
            gate = self.features(both, 0, self.cfg.hidden_dim)
            up = self.features(both, self.cfg.hidden_dim, self.cfg.hidden_dim)
        else:
            gate = self.linear(x, f"{prefix}.w1")
            up = self.linear(x, f"{prefix}.w3")
        return self.linear(self.gated(gate, up), f"{prefix}.w2")

    def gated(self, gate: _Value, up: _Value) -> _Value:
        """``act(gate) * up`` elementwise, of any rank: SiLU (SwiGLU) or the
        tanh GELU (GeGLU), as the architecture says."""
        if self.arch.activation == "gelu_tanh":
            # 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), as torch's
            # gelu(approximate="tanh") computes it.
            beta = self.b.scalar("cst", _f32(math.sqrt(2.0) * (2.0 / math.sqrt(math.pi)) * 0.5), "f32")
            kappa = self.b.scalar("cst", _f32(0.044715), "f32")
            half = self.b.scalar("cst", _f32(0.5), "f32")
            body = f"""
            %g2 = arith.mulf %g, %g : f32
            %g3 = arith.mulf %g2, %g : f32
            %k3 = arith.mulf {kappa}, %g3 : f32
            %sum = arith.addf %g, %k3 : f32
            %inner = arith.mulf {beta}, %sum : f32
            %th = math.tanh %inner : f32
            %onep = arith.addf %th, {self.one} : f32
            %hx = arith.mulf {half}, %g : f32
            %act = arith.mulf %hx, %onep : f32
            %h = arith.mulf %act, %u : f32
            linalg.yield %h : f32
            """
            label = "geglu"
        else:
            body = f"""
            %neg = arith.negf %g : f32
            %e = math.exp %neg : f32
            %den = arith.addf %e, {self.one} : f32
            %silu = arith.divf %g, %den : f32
            %h = arith.mulf %silu, %u : f32
            linalg.yield %h : f32
            """
            label = "swiglu"
        dims = list(range(len(gate.shape)))
        return self.b.generic(
            [(gate, dims), (up, dims)],
            self.b.empty(gate.shape),
            dims,
            ["parallel"] * len(dims),
            body,
            ["%g", "%u", "%out"],
            label,
        )

    def experts(self, x: _Value, prefix: str) -> _Value:
        """A mixture of SwiGLU experts (a sparse block) with routed
        dispatch: the router ``<prefix>.gate`` scores each token, its top-k
        experts get weights (the softmax over all experts of the top k,
        renormalized over those when the architecture says so: then the
        softmax of the top-k logits; or PhiMoE's sparsemixer weights,
        :meth:`sparsemixer`), the (token, choice) pairs are sorted
        by expert into the rows of one matrix, each expert's ``w1``, ``w3``
        and ``w2`` contract its own rows only (a slice of dynamic offset and
        size), and each token sums its rows, weighted. A forward thus does
        the routed experts' work alone, and calibration gives each expert
        the Hessian of the tokens routed to it.

        A shared expert (Qwen 2 MoE) sees every token; its output, times
        the sigmoid of ``<prefix>.shared_expert_gate`` applied to the token,
        is added. That gate's ``[B, S, 1]`` result, like the router's, is
        read only by ``tensor.extract``: both are routers, kept float.

        The layers of one sequential stage stay together in program order:
        the shared expert's ``w1`` and ``w3`` (which read the block's input)
        first, then all routed experts' ``w1`` and ``w3`` (which read rows
        that the router chose) with the shared expert's ``w2``, then the
        routed experts' ``w2``."""
        b, cfg, arch = self.b, self.cfg, self.arch
        experts, k, dim = arch.experts, arch.experts_per_token, cfg.dim
        if isinstance(self.seq, int) and self.seq == 1:
            tokens = self.batch
        else:
            tokens = b.fresh("tokens")
            b.emit(f"{tokens} = arith.muli {self.batch}, {self.seq} : index")
        flat = b.reshape("collapse", x, [[0, 1], [2]], [tokens, dim])

        logits = self.linear(flat, f"{prefix}.gate")
        shared = arch.shared_expert_hidden_dim > 0
        if shared:
            shared_gate = self.linear(x, f"{prefix}.shared_expert_gate")
        c = [b.scalar("c", str(i), "index") for i in range(max(experts, k) + 1)]
        true = b.scalar("true", "1", "i1")
        u = b.fresh("moe")[1:]  # a prefix for this block's names
        route, counts, scan, offsets, place, xs = (f"%{u}_{n}" for n in ("route", "counts", "scan", "offsets",
                                                                          "place", "xs"))
        ex_t, wt_t = f"tensor<?x{k}xindex>", f"tensor<?x{k}xf32>"
        cnt_t = f"tensor<{experts}xindex>"
        picks, inserts = [], []
        for j in range(k):
            taken = "".join(
                f"""
                  %_tk{i} = arith.cmpi eq, %_e, %_m{i}#1 : index
                  %_nt{i} = arith.xori %_tk{i}, {true} : i1
                  %_ok{i} = arith.andi {f"%_ok{i - 1}" if i else "%_gt"}, %_nt{i} : i1""" for i in range(j))
            ok = f"%_ok{j - 1}" if j else "%_gt"
            picks.append(f"""
                %_m{j}:2 = scf.for %_e = {c[0]} to {c[experts]} step {c[1]} iter_args(%_best = {self.neg_inf}, %_bi = {c[0]}) -> (f32, index) {{
                  %_l = tensor.extract {logits.name}[%_t, %_e] : {logits.type}
                  %_gt = arith.cmpf ogt, %_l, %_best : f32{taken}
                  %_nb = arith.select {ok}, %_l, %_best : f32
                  %_ni = arith.select {ok}, %_e, %_bi : index
                  scf.yield %_nb, %_ni : f32, index
                }}""")
        weights = (self.sparsemixer if arch.router == "sparsemixer" else self.softmax_weights)(logits, c, experts, k)
        for j in range(k):
            inserts.append(f"""
                %_ex{j + 1} = tensor.insert %_m{j}#1 into %_ex{j}[%_t, {c[j]}] : {ex_t}
                %_wt{j + 1} = tensor.insert %_p{j} into %_wt{j}[%_t, {c[j]}] : {wt_t}""")
        pairs = b.fresh("pairs")
        b.emit(f"""{pairs} = arith.muli {tokens}, {c[k]} : index
%{u}_ex = tensor.empty({tokens}) : {ex_t}
%{u}_wt = tensor.empty({tokens}) : {wt_t}
{route}:2 = scf.for %_t = {c[0]} to {tokens} step {c[1]} iter_args(%_ex0 = %{u}_ex, %_wt0 = %{u}_wt) -> ({ex_t}, {wt_t}) {{
  {"".join(picks).strip()}
  %_z = arith.constant 0.0 : f32
  {"".join(weights).strip()}
  {"".join(inserts).strip()}
  scf.yield %_ex{k}, %_wt{k} : {ex_t}, {wt_t}
}}
%{u}_zeros = arith.constant dense<0> : {cnt_t}
{counts} = scf.for %_t = {c[0]} to {tokens} step {c[1]} iter_args(%_n0 = %{u}_zeros) -> ({cnt_t}) {{
  %_n1 = scf.for %_j = {c[0]} to {c[k]} step {c[1]} iter_args(%_n = %_n0) -> ({cnt_t}) {{
    %_e = tensor.extract {route}#0[%_t, %_j] : {ex_t}
    %_v = tensor.extract %_n[%_e] : {cnt_t}
    %_v1 = arith.addi %_v, {c[1]} : index
    %_n2 = tensor.insert %_v1 into %_n[%_e] : {cnt_t}
    scf.yield %_n2 : {cnt_t}
  }}
  scf.yield %_n1 : {cnt_t}
}}
{scan}:2 = scf.for %_e = {c[0]} to {c[experts]} step {c[1]} iter_args(%_o = %{u}_zeros, %_run = {c[0]}) -> ({cnt_t}, index) {{
  %_o2 = tensor.insert %_run into %_o[%_e] : {cnt_t}
  %_n = tensor.extract {counts}[%_e] : {cnt_t}
  %_r2 = arith.addi %_run, %_n : index
  scf.yield %_o2, %_r2 : {cnt_t}, index
}}
%{u}_rows = tensor.empty({tokens}) : {ex_t}
%{u}_tok = tensor.empty({pairs}) : tensor<?xindex>
{place}:3 = scf.for %_t = {c[0]} to {tokens} step {c[1]} iter_args(%_row = %{u}_rows, %_tok = %{u}_tok, %_seen = %{u}_zeros) -> ({ex_t}, tensor<?xindex>, {cnt_t}) {{
  %_r:3 = scf.for %_j = {c[0]} to {c[k]} step {c[1]} iter_args(%_rw = %_row, %_tk = %_tok, %_sn = %_seen) -> ({ex_t}, tensor<?xindex>, {cnt_t}) {{
    %_e = tensor.extract {route}#0[%_t, %_j] : {ex_t}
    %_o = tensor.extract {scan}#0[%_e] : {cnt_t}
    %_q = tensor.extract %_sn[%_e] : {cnt_t}
    %_at = arith.addi %_o, %_q : index
    %_q1 = arith.addi %_q, {c[1]} : index
    %_sn2 = tensor.insert %_q1 into %_sn[%_e] : {cnt_t}
    %_rw2 = tensor.insert %_at into %_rw[%_t, %_j] : {ex_t}
    %_tk2 = tensor.insert %_t into %_tk[%_at] : tensor<?xindex>
    scf.yield %_rw2, %_tk2, %_sn2 : {ex_t}, tensor<?xindex>, {cnt_t}
  }}
  scf.yield %_r#0, %_r#1, %_r#2 : {ex_t}, tensor<?xindex>, {cnt_t}
}}""")
        rows = b.generic([], b.empty([pairs, dim]), [0, 1], ["parallel"] * 2, f"""
            %_r = linalg.index 0 : index
            %_i = linalg.index 1 : index
            %_tok = tensor.extract {place}#1[%_r] : tensor<?xindex>
            %_v = tensor.extract {flat.name}[%_tok, %_i] : {flat.type}
            linalg.yield %_v : f32
            """, ["%_out"], "routed")
        if shared:
            shared_hidden = self.gated(self.linear(x, f"{prefix}.shared_expert.w1"),
                                       self.linear(x, f"{prefix}.shared_expert.w3"))
        hidden, sizes = [], []
        for e in range(experts):
            off, cnt = b.fresh("offset"), b.fresh("count")
            b.emit(f"{off} = tensor.extract {scan}#0[{c[e]}] : {cnt_t}\n"
                   f"{cnt} = tensor.extract {counts}[{c[e]}] : {cnt_t}")
            mine = b.slice(rows, [off, 0], [cnt, dim], [cnt, dim])
            gate = self.linear(mine, f"{prefix}.experts.{e}.w1")
            up = self.linear(mine, f"{prefix}.experts.{e}.w3")
            hidden.append(self.gated(gate, up))
            sizes.append((off, cnt))
        if shared:
            shared_out = self.linear(shared_hidden, f"{prefix}.shared_expert.w2")
        ys = b.empty([pairs, dim])
        for e in range(experts):
            off, cnt = sizes[e]
            y = self.linear(hidden[e], f"{prefix}.experts.{e}.w2")
            name = b.fresh("expert_rows")
            b.emit(f"{name} = tensor.insert_slice {y.name} into {ys.name}[{off}, 0] [{cnt}, {dim}] [1, 1] "
                   f": {y.type} into {ys.type}")
            ys = _Value(name, ys.shape)
        terms = "".join(f"""
            %_row{j} = tensor.extract {place}#0[%_t, {c[j]}] : {ex_t}
            %_y{j} = tensor.extract {ys.name}[%_row{j}, %_i] : {ys.type}
            %_g{j} = tensor.extract {route}#1[%_t, {c[j]}] : {wt_t}
            %_gy{j} = arith.mulf %_g{j}, %_y{j} : f32
            %_acc{j + 1} = arith.addf %_acc{j}, %_gy{j} : f32""" for j in range(k))
        # Written as [B, S, dim] directly, token b * S + s: expanding a
        # [T, dim] result into two dynamic sizes crashes MLIR 22's
        # expand-strided-metadata (memref.expand_shape with two dynamic
        # sizes in one group).
        seq = self.seq if isinstance(self.seq, str) else c[self.seq]
        inputs, args, result = [], ["%_out"], f"%_acc{k}"
        if shared:
            inputs, args, result = [(shared_out, [0, 1, 2])], ["%_sh", "%_out"], "%_sum"
            terms += f"""
            %_sg = tensor.extract {shared_gate.name}[%_bi, %_si, {c[0]}] : {shared_gate.type}
            %_sn = arith.negf %_sg : f32
            %_se = math.exp %_sn : f32
            %_sd = arith.addf %_se, {self.one} : f32
            %_sw = arith.divf {self.one}, %_sd : f32
            %_sy = arith.mulf %_sw, %_sh : f32
            %_sum = arith.addf %_acc{k}, %_sy : f32"""
        return b.generic(inputs, b.empty([self.batch, self.seq, dim]), [0, 1, 2], ["parallel"] * 3, f"""
            %_bi = linalg.index 0 : index
            %_si = linalg.index 1 : index
            %_i = linalg.index 2 : index
            %_bs = arith.muli %_bi, {seq} : index
            %_t = arith.addi %_bs, %_si : index
            %_acc0 = arith.constant 0.0 : f32
            {terms.strip()}
            linalg.yield {result} : f32
            """, args, "combined")

    def softmax_weights(self, logits: _Value, c: List[str], experts: int, k: int) -> List[str]:
        """The body, within :meth:`experts`' loop over tokens ``%_t``, that
        gives the weights ``%_p{j}`` of the experts ``%_m{j}`` it picked:
        their softmax probabilities over all experts, or over the top k
        when the architecture renormalizes them."""
        weights = []
        for j in range(k):
            weights.append(f"""
                %_d{j} = arith.subf %_m{j}#0, %_m0#0 : f32
                %_x{j} = math.exp %_d{j} : f32""")
            if self.arch.norm_topk:
                weights.append(f"""
                %_s{j} = arith.addf {f"%_s{j - 1}" if j else "%_z"}, %_x{j} : f32""")
        total = f"%_s{k - 1}"
        if not self.arch.norm_topk:
            # The softmax's denominator: the sum over all experts.
            total = "%_all"
            weights.append(f"""
                %_all = scf.for %_e = {c[0]} to {c[experts]} step {c[1]} iter_args(%_a = %_z) -> (f32) {{
                  %_al = tensor.extract {logits.name}[%_t, %_e] : {logits.type}
                  %_ad = arith.subf %_al, %_m0#0 : f32
                  %_ax = math.exp %_ad : f32
                  %_a1 = arith.addf %_a, %_ax : f32
                  scf.yield %_a1 : f32
                }}""")
        weights.extend(f"""
                %_p{j} = arith.divf %_x{j}, {total} : f32""" for j in range(k))
        return weights

    def sparsemixer(self, logits: _Value, c: List[str], experts: int, k: int) -> List[str]:
        """The body, within :meth:`experts`' loop over tokens ``%_t``, that
        gives the weights ``%_p{j}`` of the experts ``%_m{j}`` it picked by
        PhiMoE's sparsemixer in inference (transformers 4.46): expert j's
        weight is the softmax probability of its logit ``m_j`` among those
        ``l`` that ``(m_j - l) / max(|l|, m_j) > 2 * jitter`` does not
        mask (float32, NaN unmasked, as torch compares), the earlier
        experts excluded: ``1 / sum exp(l - m_j)`` over the others."""
        threshold = self.b.scalar("cst", _f32(2 * self.arch.router_jitter), "f32")
        weights = []
        for j in range(k):
            masked, earlier = f"%_q{j}cut", ""
            for i in range(j):
                earlier += f"""
                  %_q{j}is{i} = arith.cmpi eq, %_e, %_m{i}#1 : index
                  %_q{j}drop{i} = arith.ori {masked}, %_q{j}is{i} : i1"""
                masked = f"%_q{j}drop{i}"
            weights.append(f"""
                %_den{j} = scf.for %_e = {c[0]} to {c[experts]} step {c[1]} iter_args(%_a = %_z) -> (f32) {{
                  %_q{j}l = tensor.extract {logits.name}[%_t, %_e] : {logits.type}
                  %_q{j}abs = math.absf %_q{j}l : f32
                  %_q{j}f = arith.maximumf %_q{j}abs, %_m{j}#0 : f32
                  %_q{j}gap = arith.subf %_m{j}#0, %_q{j}l : f32
                  %_q{j}r = arith.divf %_q{j}gap, %_q{j}f : f32
                  %_q{j}cut = arith.cmpf ogt, %_q{j}r, {threshold} : f32{earlier}
                  %_q{j}d = arith.subf %_q{j}l, %_m{j}#0 : f32
                  %_q{j}x = math.exp %_q{j}d : f32
                  %_q{j}v = arith.select {masked}, %_z, %_q{j}x : f32
                  %_q{j}s = arith.addf %_a, %_q{j}v : f32
                  scf.yield %_q{j}s : f32
                }}
                %_p{j} = arith.divf {self.one}, %_den{j} : f32""")
        return weights

    def qkv(self, xb: _Value, prefix: str) -> Tuple[_Value, _Value, _Value]:
        """The q, k and v projections ``[B, S, features]`` of one block:
        separate layers (with biases where the architecture has them), or the
        parts of one fused ``wqkv``."""
        cfg = self.cfg
        if self.arch.fused:
            fused = self.linear(xb, f"{prefix}.wqkv")
            return (self.features(fused, 0, cfg.q_dim), self.features(fused, cfg.q_dim, cfg.kv_dim),
                    self.features(fused, cfg.q_dim + cfg.kv_dim, cfg.kv_dim))
        projections = []
        for x in "qkv":
            y = self.linear(xb, f"{prefix}.w{x}")
            if self.arch.qkv_bias:
                y = self.add_bias(y, f"{prefix}.b{x}")
            projections.append(y)
        return tuple(projections)

    def block(self, x: _Value, layer: int) -> _Value:
        """One transformer block."""
        cfg, arch, prefix = self.cfg, self.arch, f"layers.{layer}"
        groups = cfg.n_heads // cfg.n_kv_heads
        xb = self.norm(x, f"{prefix}.attention_norm")
        q, k, v = self.qkv(xb, f"{prefix}.attention")
        if arch.qk_norm == "projection":
            q = self.rmsnorm(q, f"{prefix}.attention.q_norm")
            k = self.rmsnorm(k, f"{prefix}.attention.k_norm")
        if arch.clip_qkv is not None:
            q, k, v = (self.clamp(y, arch.clip_qkv) for y in (q, k, v))
        if arch.qk_norm == "head":
            q = self.rmsnorm(self.heads(q, [cfg.n_kv_heads, groups]), f"{prefix}.attention.q_norm")
            k = self.rmsnorm(self.heads(k, [cfg.n_kv_heads]), f"{prefix}.attention.k_norm")
        q = self.rotary(q, [cfg.n_kv_heads, groups])
        k = self.rotary(k, [cfg.n_kv_heads])
        v = self.heads(v, [cfg.n_kv_heads])
        kv_major = False
        if self.caches is not None:
            k, v, kv_major = self.cached(layer, k, v)
        mixed = self.attention(q, k, v, arch.window(layer), kv_major)
        out = self.linear(mixed, f"{prefix}.attention.wo")
        if arch.o_bias:
            out = self.add_bias(out, f"{prefix}.attention.bo")
        if arch.post_norms:
            out = self.rmsnorm(out, f"{prefix}.attention_post_norm")
        x = self.add(x, out)
        xb = self.norm(x, f"{prefix}.ffn_norm")
        if arch.sparse(layer):
            out = self.experts(xb, f"{prefix}.feed_forward")
        else:
            out = self.feed_forward(xb, f"{prefix}.feed_forward")
        if arch.post_norms:
            out = self.rmsnorm(out, f"{prefix}.ffn_post_norm")
        return self.add(x, out)

    # KV caches --------------------------------------------------------------

    def cache_shape(self) -> List[Dim]:
        """``[layers, batch, kv heads, positions, head size]``: a head's
        positions contiguous, so that a decode step's attention reads the
        caches in place."""
        cfg = self.cfg
        return [cfg.n_layers, "%cache_batch", cfg.n_kv_heads, "%cache_len", cfg.head_size]

    def cache_type(self) -> str:
        return _tensor(self.cache_shape()).replace("tensor<", "memref<", 1)

    def open_caches(self) -> None:
        """The caches (``%k_cache``, ``%v_cache``, written in place) as
        tensors, after checking their sizes against the tokens'."""
        b = self.b
        shape = self.cache_shape()
        self.caches = []
        for name in ("%k_cache", "%v_cache"):
            value = _Value(b.fresh("cache"), shape)
            b.emit(f"{value.name} = bufferization.to_tensor {name} restrict writable : {self.cache_type()} to {value.type}")
            self.caches.append(value)
        cache_type = self.cache_type()
        b.emit(f"%cache_batch = memref.dim %k_cache, {self.c1} : {cache_type}")
        c3 = b.scalar("c", "3", "index")
        b.emit(f"%cache_len = memref.dim %k_cache, {c3} : {cache_type}")
        for dim, what in ((self.c1, "batch"), (c3, "positions")):
            other = b.fresh("v_dim")
            b.emit(f"{other} = memref.dim %v_cache, {dim} : {cache_type}")
            same = b.fresh("same")
            b.emit(f"{same} = arith.cmpi eq, {other}, {'%cache_batch' if what == 'batch' else '%cache_len'} : index")
            b.emit(f'cf.assert {same}, "{self.mode}: the k and v caches differ in {what}"')
        ok = b.fresh("batch_ok")
        b.emit(f"{ok} = arith.cmpi eq, %cache_batch, {self.batch} : index")
        b.emit(f'cf.assert {ok}, "{self.mode}: the KV caches hold another batch size than the tokens"')
        fits = b.fresh("fits")
        b.emit(f"{fits} = arith.cmpi ule, {self.keys}, %cache_len : index")
        b.emit(f'cf.assert {fits}, "{self.mode}: the positions run past the KV caches\' length"')
        if self.mode == "decode":
            # The caches' rows of heads, batch and heads collapsed, that a
            # step reads (:meth:`cached`).
            heads = b.scalar("c", str(self.cfg.n_kv_heads), "index")
            b.emit(f"%cache_rows = arith.muli {self.batch}, {heads} : index")

    def cached(self, layer: int, k: _Value, v: _Value) -> Tuple[_Value, _Value, bool]:
        """Store ``k`` and ``v`` (``[B, S, KV, hs]``, transposed to the
        caches' ``[B, KV, S, hs]``) at positions ``start .. start + S - 1``
        of ``layer``'s caches; return what attention reads, and whether it
        is kv-major: ``k`` and ``v`` themselves in a prefill (no earlier
        positions), the caches' positions ``0 .. start`` in place in a
        decode step (``[B, KV, start + 1, hs]``)."""
        b, cfg = self.b, self.cfg
        kv, hs = cfg.n_kv_heads, cfg.head_size
        updated = []
        for cache, new in zip(self.caches, (k, v)):
            heads_first = b.generic(
                [(new, [0, 2, 1, 3])],
                b.empty([self.batch, kv, self.seq, hs]),
                [0, 1, 2, 3],
                ["parallel"] * 4,
                """
                linalg.yield %x : f32
                """,
                ["%x", "%out"],
                "to_cache",
            )
            name = b.fresh("cache")
            offsets = ", ".join(map(str, [layer, 0, 0, self.start, 0]))
            sizes = ", ".join(map(str, [1, self.batch, kv, self.seq, hs]))
            b.emit(
                f"{name} = tensor.insert_slice {heads_first.name} into {cache.name}[{offsets}] [{sizes}] "
                f"[1, 1, 1, 1, 1] : {heads_first.type} into {cache.type}"
            )
            updated.append(_Value(name, cache.shape))
        self.caches = updated
        if self.mode == "prefill":
            return k, v, False
        # Read as [B * KV, keys, hs] from the caches with batch and heads
        # collapsed (always contiguous), then expanded: a view whose heads
        # are a stride of the caches' length apart, which the products take
        # as it is (a slice [B, KV, keys, hs] collapsed there would not be
        # provably contiguous, and would be copied every step).
        rows = "%cache_rows"
        reads = []
        for cache in updated:
            flat = b.reshape("collapse", cache, [[0], [1, 2], [3], [4]], [cfg.n_layers, rows, "%cache_len", hs])
            rows_read = b.slice(flat, [layer, 0, 0, 0], [1, rows, self.keys, hs], [rows, self.keys, hs])
            reads.append(b.reshape("expand", rows_read, [[0, 1], [2], [3]], [self.batch, kv, self.keys, hs]))
        return reads[0], reads[1], True

    def close_caches(self) -> None:
        for cache, name in zip(self.caches, ("%k_cache", "%v_cache")):
            self.b.emit(
                f"bufferization.materialize_in_destination {cache.name} in restrict writable {name} "
                f": ({cache.type}, {self.cache_type()}) -> ()"
            )

    def clamp(self, x: _Value, limit: float) -> _Value:
        """``x`` clamped to ``[-limit, limit]`` elementwise (OLMoE's
        ``clip_qkv``), as torch's ``clamp``: NaN stays NaN."""
        high = self.b.scalar("cst", _f32(limit), "f32")
        low = self.b.scalar("cst", _f32(-limit), "f32")
        dims = list(range(len(x.shape)))
        return self.b.generic(
            [(x, dims)],
            self.b.empty(x.shape),
            dims,
            ["parallel"] * len(dims),
            f"""
            %above = arith.maximumf %a, {low} : f32
            %clamped = arith.minimumf %above, {high} : f32
            linalg.yield %clamped : f32
            """,
            ["%a", "%out"],
            "clamp",
        )

    def softcap(self, x: _Value, cap: float) -> _Value:
        """``cap * tanh(x / cap)`` elementwise (Gemma 2's final logits)."""
        limit = self.b.scalar("cst", _f32(cap), "f32")
        return self.b.generic(
            [(x, [0, 1, 2])],
            self.b.empty(x.shape),
            [0, 1, 2],
            ["parallel"] * 3,
            f"""
            %shrunk = arith.divf %a, {limit} : f32
            %bent = math.tanh %shrunk : f32
            %capped = arith.mulf %bent, {limit} : f32
            linalg.yield %capped : f32
            """,
            ["%a", "%out"],
            "softcap",
        )

    # The function ---------------------------------------------------------

    def _function(self) -> List[str]:
        """The text of this emitter's entry function."""
        b, cfg = self.b, self.cfg
        self._constants()
        if self.mode == "decode":
            signature = (
                f"func.func @decode(%tokens: tensor<?xi32>, %position: i64, %k_cache: {self.cache_type()}, "
                f"%v_cache: {self.cache_type()}) -> tensor<?x?xf32>"
            )
            b.emit(f"{self.batch} = tensor.dim %tokens, {self.c0} : tensor<?xi32>")
            tokens = b.reshape("expand", _Value("%tokens", [self.batch], "i32"), [[0, 1]], [self.batch, 1])
            zero = b.scalar("c", "0", "i64")
            limit = b.scalar("seq_len", str(cfg.seq_len), "i64")
            in_range = b.fresh("pos_ok")
            b.emit(f"{in_range} = arith.cmpi sge, %position, {zero} : i64")
            below = b.fresh("pos_ok")
            b.emit(f"{below} = arith.cmpi slt, %position, {limit} : i64")
            both = b.fresh("pos_ok")
            b.emit(f"{both} = arith.andi {in_range}, {below} : i1")
            b.emit(f'cf.assert {both}, "decode: position out of range [0, seq_len = {cfg.seq_len})"')
            b.emit(f"{self.start} = arith.index_cast %position : i64 to index")
            b.emit(f"{self.keys} = arith.addi {self.start}, {self.c1} : index")
        else:
            tokens = _Value("%tokens", [self.batch, self.seq], "i32")
            b.emit(f"{self.batch} = tensor.dim %tokens, {self.c0} : {tokens.type}")
            b.emit(f"{self.seq} = tensor.dim %tokens, {self.c1} : {tokens.type}")
            if self.mode == "forward":
                signature = "func.func @forward(%tokens: tensor<?x?xi32>) -> tensor<?x?x?xf32>"
            else:
                signature = (
                    f"func.func @prefill(%tokens: tensor<?x?xi32>, %k_cache: {self.cache_type()}, "
                    f"%v_cache: {self.cache_type()}) -> tensor<?x?xf32>"
                )
                some = b.fresh("some")
                b.emit(f"{some} = arith.cmpi ugt, {self.seq}, {self.c0} : index")
                b.emit(f'cf.assert {some}, "prefill: no tokens"')
        self.check_tokens(tokens)
        if self.mode != "forward":
            self.open_caches()
        if self.arch.rope_theta is not None:
            self.rope_angles()
        else:
            self.cos = self._weight("freq_cis_real")
            self.sin = self._weight("freq_cis_imag")
        x = self.embed(tokens)
        for layer in range(cfg.n_layers):
            x = self.block(x, layer)
        if self.mode != "forward":
            # The logits of the last position only.
            last: Dim = 0
            if self.mode == "prefill":
                last = b.fresh("last")
                b.emit(f"{last} = arith.subi {self.seq}, {self.c1} : index")
            x = b.slice(x, [0, last, 0], [self.batch, 1, cfg.dim], [self.batch, 1, cfg.dim])
        x = self.norm(x, "norm")
        logits = self.linear(x, self.ckpt.classifier_name, "output")
        if self.arch.lm_head_bias:
            logits = self.add_bias(logits, "output_bias")
        if self.arch.final_softcap is not None:
            logits = self.softcap(logits, self.arch.final_softcap)
        result = b.fresh("logits")
        if self.mode == "forward":
            b.emit(f"{result} = tensor.cast {logits.name} : {logits.type} to tensor<?x?x?xf32>")
            b.emit(f"return {result} : tensor<?x?x?xf32>")
        else:
            rows = b.reshape("collapse", logits, [[0, 1], [2]], [self.batch, logits.shape[2]])
            b.emit(f"{result} = tensor.cast {rows.name} : {rows.type} to tensor<?x?xf32>")
            self.close_caches()
            b.emit(f"return {result} : tensor<?x?xf32>")
        return [f"  {signature} {{", *b.lines, "  }"]

    def build(
        self,
        parameters: Optional[Union[str, List[str]]] = None,
        entries: Sequence[str] = ENTRIES,
    ) -> str:
        """The module's text, with the functions ``entries`` (this emitter's
        mode first); ``parameters`` names its parameter archive (or
        archives, searched in order). ``self.b.resources`` then holds every
        function's resources."""
        cfg = self.cfg
        functions = []
        for mode in entries:
            emitter = self if mode == self.mode else _LlamaEmitter(self.ckpt, self.references, mode)
            functions.extend(emitter._function())
            if emitter is not self:
                for name, array in emitter.b.resources.items():
                    self.b.resources.setdefault(name, array)
        attributes = f"{MODEL_ATTRIBUTE} = {model_attribute(cfg, self.rotary_order)}"
        for name, value in self.ckpt.module_attributes().items():
            attributes += f", {name} = {value}"
        if isinstance(parameters, str):
            attributes += f", {PARAMETERS_ATTRIBUTE} = {mlir_string(parameters)}"
        elif parameters is not None:
            attributes += f", {PARAMETERS_ATTRIBUTE} = [{', '.join(map(mlir_string, parameters))}]"
        return "\n".join([f"module attributes {{{attributes}}} {{", *functions, "}"])


def _write_resources(handle, resources: Dict[str, np.ndarray]) -> None:
    handle.write(b"\n{-#\n  dialect_resources: {\n    builtin: {\n")
    items = list(resources.items())
    for index, (name, array) in enumerate(items):
        alignment = max(4, array.dtype.itemsize).to_bytes(4, "little").hex().upper()
        handle.write(f'      {name}: "0x{alignment}'.encode())
        handle.write(array.tobytes().hex().encode())
        handle.write(b'"' + (b",\n" if index + 1 < len(items) else b"\n"))
    handle.write(b"    }\n  }\n#-}\n")


def emit_module(checkpoint: Checkpoint, handle) -> None:
    """Write the MLIR module for ``checkpoint`` to the binary stream ``handle``."""
    emitter = _LlamaEmitter(checkpoint)
    handle.write(emitter.build().encode())
    _write_resources(handle, emitter.b.resources)


def module_text(checkpoint: Checkpoint) -> str:
    """The MLIR module for ``checkpoint`` as a string."""
    buffer = io.BytesIO()
    emit_module(checkpoint, buffer)
    return buffer.getvalue().decode()


#: Extra-field id of the padding that aligns an archive member's data (the
#: one Android's zipalign uses); zip readers skip fields they do not know.
_ALIGNMENT_EXTRA_ID = 0xD935
_ALIGNMENT = 64


def write_weights(resources: Dict[str, np.ndarray], handle) -> None:
    """Write ``resources`` to the seekable binary stream ``handle`` as an
    uncompressed .npz archive (which ``numpy.load`` reads), each array's data
    aligned to 64 bytes in the file by a padding extra field."""
    with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in resources.items():
            header = io.BytesIO()
            np.lib.format.write_array_header_1_0(header, np.lib.format.header_data_from_array_1_0(array))
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            info.file_size = len(header.getvalue()) + array.nbytes
            # zipfile adds a 20-byte ZIP64 field to the local header of a
            # member this large, before the data.
            zip64 = 20 if info.file_size * 1.05 > zipfile.ZIP64_LIMIT else 0
            data_at = handle.tell() + 30 + len(info.filename.encode()) + zip64 + len(header.getvalue())
            pad = -data_at % _ALIGNMENT
            if pad:
                pad += _ALIGNMENT if pad < 4 else 0
                info.extra = struct.pack("<HH", _ALIGNMENT_EXTRA_ID, pad - 4) + bytes(pad - 4)
            with archive.open(info, "w") as member:
                member.write(header.getvalue())
                member.write(memoryview(np.ascontiguousarray(array)).cast("B"))


def weights_file_name(path: Union[str, os.PathLike]) -> str:
    """The archive of external weights beside the module ``path``:
    ``model.mlir`` -> ``model.weights.npz``."""
    name = Path(path).name
    return (name[: -len(".mlir")] if name.endswith(".mlir") else name) + ".weights.npz"


def weights_path(path: Union[str, os.PathLike]) -> Path:
    """The archive of external weights that belongs to the module ``path``."""
    return Path(path).parent / weights_file_name(path)


def declare_module(run: Run, path: Union[str, os.PathLike], external_weights: bool = False) -> None:
    """The files :func:`write_module` writes for ``path`` are outputs of ``run``."""
    run.output(path)
    if external_weights:
        run.output(weights_path(path), f"output {weights_path(path)} (the weights of {path})")


def archive_name(archive: Union[str, os.PathLike], module: Union[str, os.PathLike]) -> str:
    """How the module ``module`` names its parameter archive ``archive``
    (a checkpoint's safetensors file or index): relative to the module's
    folder, so that the two can move together, or absolute when they lie
    on different drives."""
    archive, folder = Path(archive).absolute(), Path(module).absolute().parent
    try:
        return os.path.relpath(archive, folder)
    except ValueError:
        return str(archive)


def write_module(
    checkpoint: Checkpoint,
    path: Union[str, os.PathLike],
    external_weights: bool = False,
    run: Optional[Run] = None,
    references: Optional[Dict[str, Reference]] = None,
    archive: Optional[Union[str, os.PathLike, List[Union[str, os.PathLike]]]] = None,
) -> None:
    """Write the MLIR module for ``checkpoint`` to ``path`` atomically.

    With ``external_weights``, the weights go to an uncompressed .npz archive
    beside it (:func:`weights_file_name`), which the module names in its
    ``gptq.parameters`` attribute; both files are renamed into place
    together, after both are written. With ``references`` (weights by our
    name) and ``archive`` (the checkpoint file that holds them), those
    weights are the tensors of the checkpoint itself, read in place: the
    module names ``archive`` as its parameter archive and nothing is
    copied (a list names several archives, e.g. the checkpoint's and the
    one import-gptq writes of its quantized layers). Into the temporaries of ``run`` when given (whose outputs
    :func:`declare_module` declared; ``run`` puts them in place), else
    through a run of its own."""
    if run is None:
        with Run() as own:
            declare_module(own, path, external_weights)
            write_module(checkpoint, path, external_weights, own, references, archive)
        return
    if references is not None:
        emitter = _LlamaEmitter(checkpoint, references)
        archives = archive if isinstance(archive, list) else [archive]
        names = [archive_name(one, path) for one in archives]
        text = emitter.build(parameters=names[0] if len(names) == 1 else names)
        with run.open(path) as handle:
            handle.write(text.encode())
            if emitter.b.resources:
                _write_resources(handle, emitter.b.resources)
            else:
                handle.write(b"\n")
        return
    if not external_weights:
        with run.open(path) as handle:
            emit_module(checkpoint, handle)
        return
    emitter = _LlamaEmitter(checkpoint)
    text = emitter.build(parameters=weights_file_name(path))
    with run.open(weights_path(path)) as handle:
        write_weights(emitter.b.resources, handle)
    with run.open(path) as handle:
        handle.write(text.encode())
        handle.write(b"\n")
