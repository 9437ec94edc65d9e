"""Reader for Hugging Face checkpoints of the architectures that
:mod:`gptq_mlir.importers.architectures` describes (safetensors).

A checkpoint is a folder with ``config.json`` and either ``model.safetensors``
or shards named by ``model.safetensors.index.json`` (its ``weight_map`` maps
each tensor name to the shard that holds it). Weights may be float32,
float16 or bfloat16; they become float32.

The result is a :class:`HfCheckpoint`, whose weights carry our (llama2.c's)
names, so that :mod:`gptq_mlir.importers.emitter` emits one module form for every
architecture and for llama2.c checkpoints. Two conventions differ between
the formats:

* names: :func:`hf_names` maps ours (``layers.0.attention.wq``) to
  Hugging Face's (``model.layers.0.self_attn.q_proj.weight``);
* rotary embedding: llama2.c rotates interleaved pairs ``(x[2i], x[2i+1])``
  of each head, Hugging Face the halves ``(x[i], x[i + head_dim / 2])``
  (Hugging Face's conversion of llama2.c/Meta weights permutes the rows of
  ``q_proj`` and ``k_proj`` per head to match, :func:`hf_rows`). The
  tensors keep Hugging Face's order, so that the module can read them in
  place from the checkpoint; the module rotates halves (``gptq.model``'s
  ``rotary = "halves"``).

By default the weights are not read at all: :func:`read_checkpoint` checks
the headers, and the module refers to each tensor by name in the
checkpoint's own files (:attr:`HfCheckpoint.references`).
"""

import dataclasses
import json
import os
import re
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

import numpy as np

from . import architectures
from ..files import inputs
# The architectures' names, shapes, q/k permutation and config parser, which
# this reader and its callers (export-gptq, import-gptq, the tests) use.
from ..errors import GPTQError
from .architectures import hf_names, hf_rows, rotary_rows, weight_shapes  # noqa: F401
from .architectures import Architecture, parse as parse_config  # noqa: F401
# One escaping of MLIR strings for every attribute the importers write.
from .config import Llama2cConfig
from .emitter import Reference, mlir_string

#: The architecture of the checkpoints that the llama2.c import's exports
#: and our tests' conversions of llama2.c checkpoints declare.
ARCHITECTURE = "LlamaForCausalLM"
CONFIG_FILE = "config.json"
SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
#: safetensors dtypes of the weights the reader accepts.
FLOAT_DTYPES = ("F32", "F16", "BF16")
MAX_POSITIONS = architectures.MAX_POSITIONS
MAX_VOCAB = architectures.MAX_VOCAB


@dataclasses.dataclass
class HfCheckpoint:
    """A Hugging Face checkpoint in llama2.c's names and layout.

    ``weights`` float32 arrays by our name, ``names`` the Hugging Face
    tensor name of each, ``dtypes`` each one's safetensors dtype in the
    checkpoint, ``hf_config`` the parsed config.json, ``architecture`` what
    the emitter needs beyond the sizes (rotary frequencies among it: the
    module computes the rotary angles of the positions it is given).
    """

    config: Llama2cConfig
    weights: Dict[str, np.ndarray]
    names: Dict[str, str]
    dtypes: Dict[str, str]
    hf_config: Dict[str, Any]
    architecture: Architecture
    #: Each weight as a tensor of the checkpoint, by our name, and the file
    #: that names them all (model.safetensors or the shards' index).
    references: Dict[str, Reference] = dataclasses.field(default_factory=dict)
    archive: Optional[Path] = None
    #: The tensors keep Hugging Face's order of q and k features.
    rotary: str = "halves"

    @property
    def rms_norm_eps(self) -> float:
        return self.architecture.rms_norm_eps

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


def mlir_dictionary(mapping: Dict[str, str]) -> str:
    """An MLIR dictionary attribute of string keys and string values."""
    return "{" + ", ".join(f"{mlir_string(k)} = {mlir_string(v)}" for k, v in sorted(mapping.items())) + "}"


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
    is read and checked (:class:`gptq_mlir.files.inputs.SafetensorsFile`) when
    this is made, tensors one at a time when asked for.

    GPTQError naming the file for one that cannot be read, a tensor the
    index puts in a file that lacks it, or a tensor stored twice."""

    def __init__(self, folder: Path, single_name: str = SINGLE_FILE):
        self._files: Dict[Path, inputs.SafetensorsFile] = {}
        self._where: Dict[str, Path] = {}
        listing = _tensor_files(folder, single_name)
        sharded = any(listed is not None for listed in listing.values())
        self._archive = folder / (f"{single_name}.index.json" if sharded else single_name)
        for file_name, listed in listing.items():
            path = folder / file_name
            what = "shard" if listed is not None else "safetensors file"
            if listed is not None and not os.path.lexists(path):
                raise GPTQError(
                    f"{self._archive}: names the shard {inputs.shown(file_name)} (for {len(listed)} tensors, "
                    f"{inputs.shown(listed[0])} first), but {path} is missing"
                )
            tensors = inputs.SafetensorsFile(path, what)
            self._files[path] = tensors
            for tensor in listed if listed is not None else sorted(tensors.tensors):
                if tensor not in tensors.tensors:
                    raise GPTQError(f"{path}: missing tensor {inputs.shown(tensor)} (the index puts it there)")
                if tensor in self._where:
                    raise GPTQError(f"{path}: tensor {inputs.shown(tensor)} is stored twice")
                self._where[tensor] = path
        if sharded:
            self._check_one_shard_each()

    def _check_one_shard_each(self) -> None:
        """GPTQError naming the tensor and both files for a tensor whose
        header entry is in two shards, whichever the index names: readers
        that load whole shards (transformers) would take either."""
        first: Dict[str, Path] = {}
        for path, tensors in self._files.items():
            for tensor in sorted(tensors.tensors):
                other = first.setdefault(tensor, path)
                if other != path:
                    listed = self._where.get(tensor)
                    where = f" (the index puts it in {listed.name})" if listed is not None else ""
                    raise GPTQError(
                        f"{self._archive}: tensor {inputs.shown(tensor)} is in two shards, {other} and "
                        f"{path}{where}; each tensor must be in one"
                    )

    def names(self) -> List[str]:
        return sorted(self._where)

    @property
    def archive(self) -> Path:
        """The file a module names as its parameter archive: the single
        file, or the shards' index."""
        return self._archive

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
        file, info = self.located(name, dtypes, shape)
        array = file.read(name)
        return array.astype(np.float32) if info.dtype in FLOAT_DTYPES else array

    def located(self, name: str, dtypes: Tuple[str, ...], shape: Tuple[int, ...]
                ) -> Tuple[inputs.SafetensorsFile, inputs.TensorInfo]:
        """The file holding tensor ``name`` and its entry, without reading
        it; GPTQError naming it unless its dtype is one of ``dtypes`` and its
        shape ``shape``."""
        dtype, found = self.dtype(name), self.shape(name)
        path = self.path(name)
        if dtype not in dtypes:
            expected = " or ".join(filter(None, [", ".join(dtypes[:-1]), dtypes[-1]]))
            raise GPTQError(f"{path}: tensor {name} has dtype {dtype}, expected {expected}")
        if found != shape:
            raise GPTQError(f"{path}: tensor {name} has shape {list(found)}, expected {list(shape)}")
        return self._files[path], self.info(name)

    def read_finite(self, name: str, shape: Tuple[int, ...]) -> np.ndarray:
        """A float32/float16/bfloat16 tensor as float32, checked finite."""
        array = self.read(name, FLOAT_DTYPES, shape)
        if not np.all(np.isfinite(array)):
            raise GPTQError(f"{self.path(name)}: tensor {name} holds non-finite values")
        return array

    def finite_rows(self, name: str, shape: Tuple[int, ...], rows: int) -> Iterator[np.ndarray]:
        """A float32/float16/bfloat16 matrix as float32, ``rows`` (at least
        1) of its rows at a time, each run read when it is asked for and
        checked finite."""
        file, info = self.located(name, FLOAT_DTYPES, shape)
        row_bytes = info.nbytes // max(1, shape[0])
        for start in range(0, shape[0], rows):
            stop = min(shape[0], start + rows)
            data = file.read_range(name, start * row_bytes, (stop - start) * row_bytes)
            part = inputs.tensor_array(data, dataclasses.replace(info, shape=(stop - start,) + tuple(shape[1:])))
            if not np.all(np.isfinite(part)):
                raise GPTQError(f"{self.path(name)}: tensor {name} holds non-finite values")
            yield part

    def __enter__(self) -> "TensorFiles":
        return self

    def __exit__(self, *exc) -> None:
        pass


#: A tensor of layer ``i``, spelled as Hugging Face's names spell ``i``
#: (other spellings are not layers of the model, and unexpected).
_LAYER_TENSOR = re.compile(r"model\.layers\.(0|[1-9][0-9]{0,17})\.")


def check_against_tensors(cfg: Llama2cConfig, files: TensorFiles, config_path: Path, folder: Path) -> None:
    """Check config.json's sizes against the tensors the headers list, before
    anything is read: the layers present are ``num_hidden_layers`` and the
    embedding table is ``[vocab_size, hidden_size]`` (every tensor's shape
    is checked when it is read)."""
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


#: The classifier's tensor, stored by untied models and by some tied ones.
LM_HEAD = "lm_head.weight"


#: Bytes of float32 rows that check_tied_lm_head compares at a time.
TIED_CHECK_BYTES = 64 << 20


def check_tied_lm_head(files: TensorFiles, embeddings: str, shape: Tuple[int, ...]) -> None:
    """A tied model may store lm_head.weight too (transformers accepts it
    and ties it to the embedding, tensor ``embeddings`` of ``shape``); it
    must then equal the embedding. Both are read and compared a run of rows
    at a time, so that the check holds neither whole."""
    rows = max(1, TIED_CHECK_BYTES // max(1, 4 * int(np.prod(shape[1:]))))
    pairs = zip(files.finite_rows(LM_HEAD, shape, rows), files.finite_rows(embeddings, shape, rows))
    if not all(np.array_equal(head, table) for head, table in pairs):
        raise GPTQError(
            f"{files.path(LM_HEAD)}: tensor {LM_HEAD} differs from model.embed_tokens.weight, but config.json "
            "has tie_word_embeddings = true (set it to false to use lm_head.weight)"
        )


def read_checkpoint(folder: Union[str, os.PathLike], read_weights: bool = True) -> HfCheckpoint:
    """Read the Hugging Face checkpoint in ``folder``.

    GPTQError naming the file, tensor or field for another architecture, an
    unsupported setting, a missing, unexpected or misshapen tensor, a dtype
    other than float32/float16/bfloat16, or tensors that contradict
    ``tie_word_embeddings`` or config.json's sizes. With ``read_weights``
    the weights are read as float32 (in Hugging Face's row order) and
    checked finite; without, only the headers are read, and the checkpoint
    gives :attr:`HfCheckpoint.references` (a tied model that also stores
    ``lm_head.weight`` has it compared with the embeddings all the same).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise GPTQError(f"{folder} is not a folder")
    config_path = folder / CONFIG_FILE
    hf_config = inputs.load_json(config_path, "config")
    cfg, arch = parse_config(hf_config, config_path)
    weights: Dict[str, np.ndarray] = {}
    dtypes: Dict[str, str] = {}
    references: Dict[str, Reference] = {}
    with TensorFiles(folder) as files:
        check_against_tensors(cfg, files, config_path, folder)
        names = hf_names(cfg.n_layers, cfg.shared_classifier, arch)
        ours_of = {theirs: ours for ours, theirs in names.items()}
        shapes = weight_shapes(cfg, arch)
        tied_lm_head = cfg.shared_classifier and LM_HEAD in files
        for tensor in files.names():
            if is_ignored(tensor) or tensor in ours_of or (tied_lm_head and tensor == LM_HEAD):
                continue
            raise GPTQError(f"{files.path(tensor)}: unexpected tensor {inputs.shown(tensor)}")
        for ours, theirs in names.items():
            if theirs not in files:
                hint = " (config.json has tie_word_embeddings = false)" if ours == "output" else ""
                raise GPTQError(f"{folder}: missing tensor {theirs}{hint}")
            dtype, shape = files.dtype(theirs), files.shape(theirs)
            if dtype not in FLOAT_DTYPES:
                raise GPTQError(f"{files.path(theirs)}: tensor {theirs} has dtype {dtype}, expected "
                                f"{', '.join(FLOAT_DTYPES[:-1])} or {FLOAT_DTYPES[-1]}")
            if shape != shapes[ours]:
                raise GPTQError(f"{files.path(theirs)}: tensor {theirs} has shape {list(shape)}, "
                                f"expected {list(shapes[ours])}")
            if read_weights:
                weights[ours] = np.ascontiguousarray(files.read_finite(theirs, shapes[ours]))
            references[ours] = Reference(theirs, dtype, shape)
            dtypes[ours] = dtype
        if tied_lm_head:
            check_tied_lm_head(files, names["tok_embeddings"], shapes["tok_embeddings"])
        archive = files.archive
    return HfCheckpoint(cfg, weights, names, dtypes, hf_config, arch, references, archive)
