"""Write a llama2.c checkpoint in the Hugging Face Llama layout, for tests.

What Hugging Face's own conversion of Meta/llama2.c weights does
(``convert_llama_weights_to_hf.py`` in transformers, and llama2.c's
``export.py --hf``): the weights under ``hf.hf_names``, the rows of every
q and k projection permuted per head for the half-rotation convention
(``hf.hf_rows``), the rotary tables dropped (they follow from
``rope_theta``), and a ``config.json`` for ``LlamaForCausalLM``. Written
with the safetensors package; ``shards > 1`` splits the tensors over that
many files named by ``model.safetensors.index.json``. As a script::

    PYTHONPATH=python .venv/bin/python python/tests/hf_convert.py \
        data/stories260K/stories260K.bin /tmp/stories260K-hf [--dtype F16] [--shards 2]
"""

import json
from pathlib import Path
from typing import Any, Dict, Optional

import numpy as np

from gptq_mlir.importers import hf
from gptq_mlir.importers.llama2c import RMS_NORM_EPS, ROPE_THETA, Llama2cCheckpoint


def hf_config(ckpt: Llama2cCheckpoint, dtype: str = "F32") -> Dict[str, Any]:
    cfg = ckpt.config
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": cfg.dim,
        "intermediate_size": cfg.hidden_dim,
        "num_hidden_layers": cfg.n_layers,
        "num_attention_heads": cfg.n_heads,
        "num_key_value_heads": cfg.n_kv_heads,
        "vocab_size": cfg.vocab_size,
        "max_position_embeddings": cfg.seq_len,
        "rms_norm_eps": RMS_NORM_EPS,
        "rope_theta": ROPE_THETA,
        "hidden_act": "silu",
        "tie_word_embeddings": cfg.shared_classifier,
        "rope_scaling": None,
        "attention_bias": False,
        "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[dtype],
        "bos_token_id": 1,
        "eos_token_id": 2,
    }


def hf_tensors(ckpt: Llama2cCheckpoint) -> Dict[str, np.ndarray]:
    """The float32 tensors by Hugging Face name, q/k rows permuted."""
    cfg = ckpt.config
    tensors = {}
    for ours, theirs in hf.hf_names(cfg.n_layers, cfg.shared_classifier).items():
        array = ckpt.weights[ours]
        rows = hf.rotary_rows(cfg, ours)
        tensors[theirs] = np.ascontiguousarray(array if rows is None else array[rows])
    return tensors


def save_tensors(tensors: Dict[str, np.ndarray], path: Path, dtype: str = "F32") -> None:
    """Write ``tensors`` to ``path``, the float32 ones as ``dtype`` (F32,
    F16 or BF16), others as they are."""
    if dtype == "BF16":
        import torch
        from safetensors.torch import save_file as save_torch

        save_torch({k: torch.from_numpy(v).to(torch.bfloat16) if v.dtype == np.float32
                    else torch.from_numpy(v) for k, v in tensors.items()}, str(path))
        return
    from safetensors.numpy import save_file

    numpy_dtype = {"F32": np.float32, "F16": np.float16}[dtype]
    save_file({k: v.astype(numpy_dtype) if v.dtype == np.float32 else v for k, v in tensors.items()}, str(path))


def write_hf_checkpoint(
    ckpt: Llama2cCheckpoint,
    folder: Path,
    dtype: str = "F32",
    shards: int = 1,
    config: Optional[Dict[str, Any]] = None,
    tensors: Optional[Dict[str, np.ndarray]] = None,
) -> Path:
    """Write ``ckpt`` into ``folder`` (made if missing) in the Hugging Face
    layout; ``config`` and ``tensors`` replace the converted ones (for bad
    inputs). Returns ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    config = hf_config(ckpt, dtype) if config is None else config
    tensors = hf_tensors(ckpt) if tensors is None else tensors
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    if shards == 1:
        save_tensors(tensors, folder / "model.safetensors", dtype)
        return folder
    names = list(tensors)
    weight_map = {}
    for shard in range(shards):
        file_name = f"model-{shard + 1:05d}-of-{shards:05d}.safetensors"
        part = {name: tensors[name] for name in names[shard::shards]}
        save_tensors(part, folder / file_name, dtype)
        weight_map.update({name: file_name for name in part})
    index = {"metadata": {"total_size": sum(t.nbytes for t in tensors.values())}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    return folder



def write_gptq_checkpoint(ckpt: Llama2cCheckpoint, folder: Path, bits: int = 4) -> Path:
    """A GPTQ checkpoint of ``ckpt`` in ``folder``: layer 0's q projection
    quantized (all codes 0, zero points 1, scales 1, one group), the rest
    float; with quantization_config and quantize_config.json."""
    tensors = hf_tensors(ckpt)
    dim = ckpt.config.dim
    q = "model.layers.0.self_attn.q_proj"
    del tensors[f"{q}.weight"]
    tensors[f"{q}.qweight"] = np.zeros((dim * bits // 32, dim), np.int32)
    tensors[f"{q}.qzeros"] = np.zeros((1, dim * bits // 32), np.int32)
    tensors[f"{q}.scales"] = np.ones((1, dim), np.float16)
    tensors[f"{q}.g_idx"] = np.zeros(dim, np.int32)
    config = hf_config(ckpt)
    quantization = {"quant_method": "gptq", "bits": bits, "group_size": -1, "checkpoint_format": "gptq"}
    config["quantization_config"] = quantization
    write_hf_checkpoint(ckpt, folder, config=config, tensors=tensors)
    (Path(folder) / "quantize_config.json").write_text(json.dumps(quantization))
    return Path(folder)

if __name__ == "__main__":
    import argparse

    from gptq_mlir.importers import llama2c

    parser = argparse.ArgumentParser(description="llama2.c checkpoint -> Hugging Face Llama folder")
    parser.add_argument("checkpoint")
    parser.add_argument("folder")
    parser.add_argument("--dtype", choices=("F32", "F16", "BF16"), default="F32")
    parser.add_argument("--shards", type=int, default=1)
    args = parser.parse_args()
    write_hf_checkpoint(llama2c.read_checkpoint(args.checkpoint), Path(args.folder), args.dtype, args.shards)
