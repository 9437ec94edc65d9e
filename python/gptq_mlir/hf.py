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
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

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


def load_json(path: Path, what: str) -> Any:
    try:
        with open(path, "rb") as handle:
            return json.loads(handle.read().decode("utf-8"))
    except OSError as error:
        raise GPTQError(f"cannot read {what} {path}: {error.strerror or error}") from error
    except (UnicodeDecodeError, ValueError) as error:
        raise GPTQError(f"{path}: not valid JSON: {error}") from None


def _config_int(config: Dict[str, Any], key: str, path: Path, default: Optional[int] = None) -> int:
    value = config.get(key, default)
    if value is None:
        raise GPTQError(f"{path}: missing field {key}")
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise GPTQError(f"{path}: field {key} is {value!r}, expected a positive integer")
    return value


def _config_float(config: Dict[str, Any], key: str, path: Path) -> float:
    value = config.get(key, DEFAULTS[key])
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise GPTQError(f"{path}: field {key} is {value!r}, expected a positive number")
    return float(value)


def parse_config(config: Any, path: Path) -> Tuple[Llama2cConfig, float, float]:
    """(config, rms_norm_eps, rope_theta) from a parsed config.json; GPTQError
    naming the field for another architecture or a setting the module cannot
    express. ``shared_classifier`` is ``tie_word_embeddings``."""
    if not isinstance(config, dict):
        raise GPTQError(f"{path}: expected a JSON object")
    architectures = config.get("architectures")
    if architectures != [ARCHITECTURE]:
        raise GPTQError(f"{path}: architectures is {architectures!r}, expected ['{ARCHITECTURE}']")
    if config.get("model_type", "llama") != "llama":
        raise GPTQError(f"{path}: model_type is {config['model_type']!r}, expected 'llama'")
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
            raise GPTQError(f"{path}: unsupported {key} = {json.dumps(config[key])}")
    tie = config.get("tie_word_embeddings", DEFAULTS["tie_word_embeddings"])
    if not isinstance(tie, bool):
        raise GPTQError(f"{path}: field tie_word_embeddings is {tie!r}, expected true or false")
    heads = _config_int(config, "num_attention_heads", path)
    cfg = Llama2cConfig(
        dim=_config_int(config, "hidden_size", path),
        hidden_dim=_config_int(config, "intermediate_size", path),
        n_layers=_config_int(config, "num_hidden_layers", path),
        n_heads=heads,
        n_kv_heads=_config_int(config, "num_key_value_heads", path, heads),
        vocab_size=_config_int(config, "vocab_size", path),
        seq_len=_config_int(config, "max_position_embeddings", path),
        shared_classifier=tie,
    )
    try:
        cfg.validate()
    except GPTQError as error:
        raise GPTQError(f"{path}: {str(error).replace('checkpoint header', 'config')}") from None
    if config.get("head_dim", cfg.head_size) != cfg.head_size:
        raise GPTQError(
            f"{path}: unsupported head_dim = {config['head_dim']}, expected hidden_size / "
            f"num_attention_heads = {cfg.head_size}"
        )
    return cfg, _config_float(config, "rms_norm_eps", path), _config_float(config, "rope_theta", path)


def _tensor_files(folder: Path) -> Dict[str, List[str]]:
    """The safetensors files of a checkpoint and the tensors the index puts in
    each (None for a single file: all of its tensors)."""
    single, index = folder / SINGLE_FILE, folder / INDEX_FILE
    if single.is_file():
        return {SINGLE_FILE: None}
    if not index.is_file():
        raise GPTQError(f"{folder}: neither {SINGLE_FILE} nor {INDEX_FILE}")
    content = load_json(index, "index")
    weight_map = content.get("weight_map") if isinstance(content, dict) else None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise GPTQError(f"{index}: expected a weight_map object of tensor name -> file name")
    files: Dict[str, List[str]] = {}
    for tensor, name in weight_map.items():
        if Path(name).name != name:
            raise GPTQError(f"{index}: tensor {tensor} is in {name!r}, expected a file name in the folder")
        files.setdefault(name, []).append(tensor)
    return files


def is_ignored(name: str) -> bool:
    """Tensors that are not weights: older checkpoints store rotary frequencies."""
    return name.endswith(".self_attn.rotary_emb.inv_freq")


class TensorFiles:
    """The tensors of a checkpoint folder: ``model.safetensors``, or the
    shards ``model.safetensors.index.json`` names, opened with the
    safetensors package (which maps the files) and read one at a time.

    GPTQError naming the file for one that cannot be read, a tensor the
    index puts in a file that lacks it, or a tensor stored twice."""

    def __init__(self, folder: Path):
        from safetensors import SafetensorError, safe_open

        self._handles: Dict[Path, Any] = {}
        self._where: Dict[str, Path] = {}
        for file_name, listed in _tensor_files(folder).items():
            path = folder / file_name
            try:
                handle = safe_open(str(path), framework="np")
            except (OSError, SafetensorError) as error:
                raise GPTQError(f"cannot read {path}: {error}") from None
            self._handles[path] = handle
            keys = set(handle.keys())
            for tensor in listed if listed is not None else sorted(keys):
                if tensor not in keys:
                    raise GPTQError(f"{path}: missing tensor {tensor} (the index puts it there)")
                if tensor in self._where:
                    raise GPTQError(f"{path}: tensor {tensor} is stored twice")
                self._where[tensor] = path

    def names(self) -> List[str]:
        return sorted(self._where)

    def __contains__(self, name: str) -> bool:
        return name in self._where

    def path(self, name: str) -> Path:
        """The file that holds tensor ``name``."""
        return self._where[name]

    def dtype(self, name: str) -> str:
        return self._handles[self._where[name]].get_slice(name).get_dtype()

    def shape(self, name: str) -> Tuple[int, ...]:
        return tuple(self._handles[self._where[name]].get_slice(name).get_shape())

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
        if dtype == "BF16":
            # numpy has no bfloat16; torch (a dependency of the package) reads it.
            from safetensors import safe_open
            import torch

            with safe_open(str(path), framework="pt") as handle:
                return handle.get_tensor(name).to(torch.float32).numpy()
        array = np.asarray(self._handles[path].get_tensor(name))
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
        for handle in self._handles.values():
            handle.__exit__(None, None, None)


def read_checkpoint(folder: Union[str, os.PathLike]) -> HfCheckpoint:
    """Read the Hugging Face Llama checkpoint in ``folder``.

    GPTQError naming the file, tensor or field for another architecture, an
    unsupported setting, a missing, unexpected or misshapen tensor, a dtype
    other than float32/float16/bfloat16, non-finite values, or tensors that
    contradict ``tie_word_embeddings``.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise GPTQError(f"{folder} is not a folder")
    config_path = folder / CONFIG_FILE
    hf_config = load_json(config_path, "config")
    cfg, eps, theta = parse_config(hf_config, config_path)
    names = hf_names(cfg.n_layers, cfg.shared_classifier)
    ours_of = {theirs: ours for ours, theirs in names.items()}
    shapes = weight_shapes(cfg)

    weights: Dict[str, np.ndarray] = {}
    dtypes: Dict[str, str] = {}
    with TensorFiles(folder) as files:
        for tensor in files.names():
            if is_ignored(tensor):
                continue
            if tensor not in ours_of:
                if tensor == "lm_head.weight":
                    raise GPTQError(
                        f"{files.path(tensor)}: tensor lm_head.weight present but config.json has "
                        "tie_word_embeddings = true"
                    )
                raise GPTQError(f"{files.path(tensor)}: unexpected tensor {tensor}")
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
