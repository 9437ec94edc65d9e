"""Reader for Hugging Face Llama checkpoints (``LlamaForCausalLM``, safetensors).

A checkpoint is a folder with ``config.json`` and either ``model.safetensors``
or shards named by ``model.safetensors.index.json`` (its ``weight_map`` maps
each tensor name to the shard that holds it). Weights may be float32,
float16 or bfloat16; they become float32.

The result is a :class:`HfCheckpoint`, whose weights carry llama2.c's names
and layout, so that :mod:`gptq_mlir.importer` emits the same module as for
a llama2.c checkpoint. Two conventions differ between the formats:

* names: :func:`hf_names` maps llama2.c's (``layers.0.attention.wq``) to
  Hugging Face's (``model.layers.0.self_attn.q_proj.weight``);
* rotary embedding: llama2.c rotates interleaved pairs ``(x[2i], x[2i+1])``
  of each head, Hugging Face the halves ``(x[i], x[i + head_dim / 2])``.
  Hugging Face's conversion of llama2.c/Meta weights permutes the rows of
  ``q_proj`` and ``k_proj`` per head to match (:func:`hf_rows`); the reader
  undoes that permutation, so the module is exactly the llama2.c form.
"""

import dataclasses
import json
import math
import os
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from . import inputs
from .errors import GPTQError
from .llama2c import Llama2cConfig, _layer_shapes, rope_tables

ARCHITECTURE = "LlamaForCausalLM"
CONFIG_FILE = "config.json"
SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
#: safetensors dtypes of the weights the reader accepts.
FLOAT_DTYPES = ("F32", "F16", "BF16")
#: Hugging Face's LlamaConfig defaults for the fields a config may omit.
DEFAULTS = {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": False, "hidden_act": "silu"}

#: llama2.c's per-layer weight names and Hugging Face's, within layer ``i``.
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


def hf_names(n_layers: int, shared_classifier: bool) -> Dict[str, str]:
    """Hugging Face's tensor name for each llama2.c weight name (and ``output``,
    the classifier layer, whose weight is ``lm_head.weight`` when untied)."""
    names = {"tok_embeddings": "model.embed_tokens.weight", "norm": "model.norm.weight"}
    for layer in range(n_layers):
        for ours, theirs in _LAYER_NAMES.items():
            names[f"layers.{layer}.{ours}"] = f"model.layers.{layer}.{theirs}"
    if not shared_classifier:
        names["output"] = "lm_head.weight"
    return names


def hf_rows(n_heads: int, head_size: int) -> np.ndarray:
    """The row permutation of Hugging Face's q/k conversion: ``w_hf = w[rows]``.

    Hugging Face's ``w.view(n_heads, head_size // 2, 2, dim).transpose(1, 2)``:
    row ``h * head_size + t * head_size / 2 + i`` of the converted weight is
    row ``h * head_size + 2 * i + t`` of llama2.c's (``t`` in {0, 1}).
    ``np.argsort`` of it is the inverse."""
    half = head_size // 2
    rows = np.arange(n_heads * head_size).reshape(n_heads, half, 2)
    return rows.transpose(0, 2, 1).reshape(-1)


def rotary_rows(cfg: Llama2cConfig, weight_name: str) -> Optional[np.ndarray]:
    """:func:`hf_rows` for a q or k projection's weight name, else None."""
    if weight_name.endswith(".attention.wq"):
        return hf_rows(cfg.n_heads, cfg.head_size)
    if weight_name.endswith(".attention.wk"):
        return hf_rows(cfg.n_kv_heads, cfg.head_size)
    return None


@dataclasses.dataclass
class HfCheckpoint:
    """A Hugging Face Llama checkpoint in llama2.c's names and layout.

    ``weights`` as :class:`gptq_mlir.llama2c.Llama2cCheckpoint`'s (rotary
    tables included, computed from ``rope_theta``), ``names`` the Hugging
    Face tensor name of each, ``dtypes`` each one's safetensors dtype in the
    checkpoint, ``hf_config`` the parsed config.json.
    """

    config: Llama2cConfig
    weights: Dict[str, np.ndarray]
    rms_norm_eps: float
    rope_theta: float
    names: Dict[str, str]
    dtypes: Dict[str, str]
    hf_config: Dict[str, Any]

    @property
    def classifier_name(self) -> str:
        return "tok_embeddings" if self.config.shared_classifier else "output"

    def quantized_weights(self) -> dict:
        return {}

    def module_attributes(self) -> Dict[str, str]:
        """The module attributes that record where each weight came from."""
        return {
            NAMES_ATTRIBUTE: mlir_dictionary(self.names),
            DTYPES_ATTRIBUTE: mlir_dictionary(self.dtypes),
            CONFIG_ATTRIBUTE: mlir_string(json.dumps(self.hf_config, sort_keys=True)),
        }


#: Module attributes of an import-hf module: our weight name -> Hugging Face
#: tensor name, -> its safetensors dtype, and config.json as a JSON string.
NAMES_ATTRIBUTE = "gptq.hf_names"
DTYPES_ATTRIBUTE = "gptq.hf_dtypes"
CONFIG_ATTRIBUTE = "gptq.hf_config"


def mlir_string(text: str) -> str:
    """An MLIR string literal for ``text`` (``"`` and ``\\`` and controls escaped)."""
    out = []
    for char in text:
        if char in '"\\' or ord(char) < 0x20:
            out.append(f"\\{ord(char):02X}")
        elif ord(char) > 0x7E:
            out.extend(f"\\{byte:02X}" for byte in char.encode())
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def mlir_dictionary(mapping: Dict[str, str]) -> str:
    """An MLIR dictionary attribute of string keys and string values."""
    return "{" + ", ".join(f"{mlir_string(k)} = {mlir_string(v)}" for k, v in sorted(mapping.items())) + "}"


#: The most positions a config may give (max_position_embeddings): the
#: rotary tables' angles are float32 products of the position, and float32
#: holds every integer only up to 2**24. Llama 3.1 has 131,072 positions.
MAX_POSITIONS = 1 << 24
#: The largest vocabulary: the module's token ids are i32.
MAX_VOCAB = (1 << 31) - 1
#: rms_norm_eps must be a normal float32 (the module's type; a subnormal or
#: zero epsilon divides by zero for a row of zeros) and at most 0.1: it is
#: added to a mean of squares near 1, and larger values flatten every
#: activation (1e300 makes all logits zero). Llama uses 1e-5 and 1e-6.
EPS_RANGE = (float(np.finfo(np.float32).tiny), 0.1)
#: rope_theta must exceed 1 (theta ** (2i / d) then falls with i, and 0 or
#: a float32 underflow makes the tables NaN) and be finite in float32, the
#: tables' type. Llama uses 1e4 and 5e5.
THETA_RANGE = (1.0, float(np.finfo(np.float32).max))


def _config_int(config: Dict[str, Any], key: str, path: Path, default: Optional[int] = None,
                maximum: Optional[int] = None) -> int:
    value = config.get(key, default)
    if value is None:
        raise GPTQError(f"{path}: missing field {key}")
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise GPTQError(f"{path}: field {key} is {inputs.describe(value)}, expected a positive integer")
    if maximum is not None and value > maximum:
        raise GPTQError(f"{path}: field {key} is {value}, expected an integer in [1, {maximum}]")
    return value


def _config_float(config: Dict[str, Any], key: str, path: Path, bounds: Tuple[float, float],
                  open_below: bool) -> float:
    """A number field within ``bounds`` (the lower one excluded when
    ``open_below``), as float32 represents it."""
    value = config.get(key, DEFAULTS[key])
    low, high = bounds
    interval = f"{'(' if open_below else '['}{low:g}, {high:g}]"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise GPTQError(f"{path}: field {key} is {inputs.describe(value)}, expected a number in {interval}")
    number = float(value) if not isinstance(value, int) or abs(value) < 2**1000 else math.inf
    if not (low < number if open_below else low <= number) or not number <= high:
        raise GPTQError(f"{path}: field {key} is {inputs.describe(value)}, expected a number in {interval}")
    return number


def parse_config(config: Any, path: Path) -> Tuple[Llama2cConfig, float, float]:
    """(config, rms_norm_eps, rope_theta) from a parsed config.json; GPTQError
    naming the field for another architecture or a setting the module cannot
    express. ``shared_classifier`` is ``tie_word_embeddings``."""
    if not isinstance(config, dict):
        raise GPTQError(f"{path}: expected a JSON object")
    architectures = config.get("architectures")
    if architectures != [ARCHITECTURE]:
        shown = repr(architectures) if len(repr(architectures)) < 80 else inputs.describe(architectures)
        raise GPTQError(f"{path}: architectures is {shown}, expected ['{ARCHITECTURE}']")
    if config.get("model_type", "llama") != "llama":
        raise GPTQError(f"{path}: model_type is {inputs.describe(config['model_type'])}, expected \"llama\"")
    if "quantization_config" in config:
        raise GPTQError(f"{path}: field quantization_config: a quantized checkpoint (read it with import-gptq)")
    unsupported = {
        "rope_scaling": lambda v: v is None,
        "attention_bias": lambda v: v is False,
        "mlp_bias": lambda v: v is False,
        "hidden_act": lambda v: v == "silu",
    }
    for key, supported in unsupported.items():
        if key in config and not supported(config[key]):
            raise GPTQError(f"{path}: unsupported {key} = {inputs.describe(config[key])}")
    tie = config.get("tie_word_embeddings", DEFAULTS["tie_word_embeddings"])
    if not isinstance(tie, bool):
        raise GPTQError(f"{path}: field tie_word_embeddings is {inputs.describe(tie)}, expected true or false")
    heads = _config_int(config, "num_attention_heads", path)
    cfg = Llama2cConfig(
        dim=_config_int(config, "hidden_size", path),
        hidden_dim=_config_int(config, "intermediate_size", path),
        n_layers=_config_int(config, "num_hidden_layers", path),
        n_heads=heads,
        n_kv_heads=_config_int(config, "num_key_value_heads", path, heads),
        vocab_size=_config_int(config, "vocab_size", path, maximum=MAX_VOCAB),
        seq_len=_config_int(config, "max_position_embeddings", path, maximum=MAX_POSITIONS),
        shared_classifier=tie,
    )
    try:
        cfg.validate()
    except GPTQError as error:
        raise GPTQError(f"{path}: {str(error).replace('checkpoint header', 'config')}") from None
    head_dim = config.get("head_dim")
    if head_dim is not None and (type(head_dim) is not int or head_dim != cfg.head_size):
        raise GPTQError(
            f"{path}: unsupported head_dim = {inputs.describe(head_dim)}, expected hidden_size / "
            f"num_attention_heads = {cfg.head_size}"
        )
    eps = _config_float(config, "rms_norm_eps", path, EPS_RANGE, open_below=False)
    theta = _config_float(config, "rope_theta", path, THETA_RANGE, open_below=True)
    return cfg, eps, theta


def _tensor_files(folder: Path, single_name: str = SINGLE_FILE) -> Dict[str, Optional[List[str]]]:
    """The safetensors files of a checkpoint and the tensors the index puts in
    each (None for a single file: all of its tensors). ``single_name`` is
    the single file's name, its index's that name plus ``.index.json``."""
    index_name = f"{single_name}.index.json"
    single, index = folder / single_name, folder / index_name
    # lexists: a FIFO or a broken link in a file's place is that file,
    # refused by name when it is opened, not taken for its absence.
    if os.path.lexists(single):
        return {single_name: None}
    if not os.path.lexists(index):
        raise GPTQError(f"{folder}: neither {single_name} nor {index_name}")
    content = inputs.load_json(index, "index")
    weight_map = content.get("weight_map") if isinstance(content, dict) else None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise GPTQError(f"{index}: expected a weight_map object of tensor name -> file name")
    files: Dict[str, List[str]] = {}
    for tensor, name in weight_map.items():
        if not name or "/" in name or "\0" in name or name in (".", ".."):
            raise GPTQError(
                f"{index}: tensor {inputs.shown(tensor)} is in {inputs.describe(name)}, expected a file name in the folder"
            )
        files.setdefault(name, []).append(tensor)
    return files


def is_ignored(name: str) -> bool:
    """Tensors that are not weights: older checkpoints store rotary frequencies."""
    return name.endswith(".self_attn.rotary_emb.inv_freq")


class TensorFiles:
    """The tensors of a checkpoint folder: ``model.safetensors``, or the
    shards ``model.safetensors.index.json`` names (``single_name`` in place
    of ``model.safetensors`` for a checkpoint that names its file otherwise,
    as AutoGPTQ's ``gptq_model-4bit-128g.safetensors``). Every file's header
    is read and checked (:class:`gptq_mlir.inputs.SafetensorsFile`) when
    this is made, tensors one at a time when asked for.

    GPTQError naming the file for one that cannot be read, a tensor the
    index puts in a file that lacks it, or a tensor stored twice."""

    def __init__(self, folder: Path, single_name: str = SINGLE_FILE):
        self._files: Dict[Path, inputs.SafetensorsFile] = {}
        self._where: Dict[str, Path] = {}
        for file_name, listed in _tensor_files(folder, single_name).items():
            path = folder / file_name
            what = "shard" if listed is not None else "safetensors file"
            tensors = inputs.SafetensorsFile(path, what)
            self._files[path] = tensors
            for tensor in listed if listed is not None else sorted(tensors.tensors):
                if tensor not in tensors.tensors:
                    raise GPTQError(f"{path}: missing tensor {inputs.shown(tensor)} (the index puts it there)")
                if tensor in self._where:
                    raise GPTQError(f"{path}: tensor {inputs.shown(tensor)} is stored twice")
                self._where[tensor] = path

    def names(self) -> List[str]:
        return sorted(self._where)

    def __contains__(self, name: str) -> bool:
        return name in self._where

    def path(self, name: str) -> Path:
        """The file that holds tensor ``name``."""
        return self._where[name]

    def info(self, name: str) -> inputs.TensorInfo:
        return self._files[self._where[name]].tensors[name]

    def dtype(self, name: str) -> str:
        return self.info(name).dtype

    def shape(self, name: str) -> Tuple[int, ...]:
        return self.info(name).shape

    def total_bytes(self) -> int:
        """The bytes of all the tensors listed."""
        return sum(self.info(name).nbytes for name in self._where)

    def read(self, name: str, dtypes: Tuple[str, ...], shape: Tuple[int, ...]) -> np.ndarray:
        """Tensor ``name``, float ones as float32; GPTQError naming it unless
        its dtype is one of ``dtypes`` and its shape ``shape``."""
        dtype, found = self.dtype(name), self.shape(name)
        path = self.path(name)
        if dtype not in dtypes:
            expected = " or ".join(filter(None, [", ".join(dtypes[:-1]), dtypes[-1]]))
            raise GPTQError(f"{path}: tensor {name} has dtype {dtype}, expected {expected}")
        if found != shape:
            raise GPTQError(f"{path}: tensor {name} has shape {list(found)}, expected {list(shape)}")
        array = self._files[path].read(name)
        return array.astype(np.float32) if dtype in FLOAT_DTYPES else array

    def read_finite(self, name: str, shape: Tuple[int, ...]) -> np.ndarray:
        """A float32/float16/bfloat16 tensor as float32, checked finite."""
        array = self.read(name, FLOAT_DTYPES, shape)
        if not np.all(np.isfinite(array)):
            raise GPTQError(f"{self.path(name)}: tensor {name} holds non-finite values")
        return array

    def __enter__(self) -> "TensorFiles":
        return self

    def __exit__(self, *exc) -> None:
        pass


#: A tensor of layer ``i``, spelled as Hugging Face's names spell ``i``
#: (other spellings are not layers of the model, and unexpected).
_LAYER_TENSOR = re.compile(r"model\.layers\.(0|[1-9][0-9]{0,17})\.")


def check_against_tensors(cfg: Llama2cConfig, files: TensorFiles, config_path: Path, folder: Path) -> None:
    """Check config.json's sizes against the tensors the headers list, before
    anything proportional to them is built: the layers present are
    ``num_hidden_layers``, the embedding table is ``[vocab_size,
    hidden_size]``, and the rotary tables computed from
    ``max_position_embeddings`` are no larger than the weights."""
    layers = {int(m.group(1)) for m in map(_LAYER_TENSOR.match, files.names()) if m}
    present = max(layers) + 1 if layers else 0
    if present != cfg.n_layers:
        holds = f"tensors of layers 0 to {present - 1}" if layers else "no model.layers.* tensors"
        raise GPTQError(f"{config_path}: field num_hidden_layers is {cfg.n_layers}, but {folder} holds {holds}")
    embeddings = "model.embed_tokens.weight"
    if embeddings not in files:
        raise GPTQError(f"{folder}: missing tensor {embeddings}")
    if files.shape(embeddings) != (cfg.vocab_size, cfg.dim):
        raise GPTQError(
            f"{config_path}: fields vocab_size {cfg.vocab_size} and hidden_size {cfg.dim} disagree with "
            f"tensor {embeddings} of shape {list(files.shape(embeddings))}"
        )
    table_bytes = 2 * 4 * cfg.seq_len * (cfg.head_size // 2)
    if table_bytes > files.total_bytes():
        raise GPTQError(
            f"{config_path}: field max_position_embeddings is {cfg.seq_len}: its rotary tables of "
            f"{table_bytes} bytes would be larger than the checkpoint's {files.total_bytes()} bytes of weights"
        )


def read_checkpoint(folder: Union[str, os.PathLike]) -> HfCheckpoint:
    """Read the Hugging Face Llama checkpoint in ``folder``.

    GPTQError naming the file, tensor or field for another architecture, an
    unsupported setting, a missing, unexpected or misshapen tensor, a dtype
    other than float32/float16/bfloat16, non-finite values, or tensors that
    contradict ``tie_word_embeddings`` or config.json's sizes.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise GPTQError(f"{folder} is not a folder")
    config_path = folder / CONFIG_FILE
    hf_config = inputs.load_json(config_path, "config")
    cfg, eps, theta = parse_config(hf_config, config_path)
    weights: Dict[str, np.ndarray] = {}
    dtypes: Dict[str, str] = {}
    with TensorFiles(folder) as files:
        check_against_tensors(cfg, files, config_path, folder)
        names = hf_names(cfg.n_layers, cfg.shared_classifier)
        ours_of = {theirs: ours for ours, theirs in names.items()}
        shapes = weight_shapes(cfg)
        for tensor in files.names():
            if is_ignored(tensor):
                continue
            if tensor not in ours_of:
                if tensor == "lm_head.weight":
                    raise GPTQError(
                        f"{files.path(tensor)}: tensor lm_head.weight present but config.json has "
                        "tie_word_embeddings = true"
                    )
                raise GPTQError(f"{files.path(tensor)}: unexpected tensor {inputs.shown(tensor)}")
        for ours, theirs in names.items():
            if theirs not in files:
                hint = " (config.json has tie_word_embeddings = false)" if ours == "output" else ""
                raise GPTQError(f"{folder}: missing tensor {theirs}{hint}")
            array = files.read_finite(theirs, shapes[ours])
            rows = rotary_rows(cfg, ours)
            weights[ours] = np.ascontiguousarray(array if rows is None else array[np.argsort(rows)])
            dtypes[ours] = files.dtype(theirs)
    weights["freq_cis_real"], weights["freq_cis_imag"] = rope_tables(cfg.head_size, cfg.seq_len, theta)
    return HfCheckpoint(cfg, weights, eps, theta, names, dtypes, hf_config)


def weight_shapes(cfg: Llama2cConfig) -> Dict[str, Tuple[int, ...]]:
    """The shape of each weight, by llama2.c name."""
    shapes: Dict[str, Tuple[int, ...]] = {
        "tok_embeddings": (cfg.vocab_size, cfg.dim),
        "norm": (cfg.dim,),
        "output": (cfg.vocab_size, cfg.dim),
    }
    for layer in range(cfg.n_layers):
        for suffix, shape in _layer_shapes(cfg).items():
            shapes[f"layers.{layer}.{suffix}"] = shape
    return shapes
