"""Writes a tiny Hugging Face checkpoint with random weights, for lit tests:
config.json and model.safetensors (written here, so that only NumPy is
needed), the tensors named and shaped as gptq_mlir.importers.architectures says for
the config. Usage: random_hf_checkpoint.py KIND FOLDER [LAYERS], KIND one
of the configs below (each exercises what its architecture adds to Llama),
LAYERS the number of layers (default 2: Gemma 2 alternates its window)."""

import json
import sys
from pathlib import Path

import numpy as np

from gptq_mlir.importers import architectures

_SIZES = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
          "num_key_value_heads": 2, "vocab_size": 256, "rms_norm_eps": 1e-6}
CONFIGS = {
    # tanh GELU, soft caps, (1 + w) norms, post norms, a window on even layers, head_dim 32.
    "gemma2": dict(_SIZES, architectures=["Gemma2ForCausalLM"], model_type="gemma2", head_dim=32,
                   query_pre_attn_scalar=32, sliding_window=4, attn_logit_softcapping=1.0,
                   final_logit_softcapping=30.0, max_position_embeddings=64),
    # Fused layers split by slices, a window.
    "phi3": dict(_SIZES, architectures=["Phi3ForCausalLM"], model_type="phi3", sliding_window=4,
                 max_position_embeddings=64),
    # Dynamic NTK scaling (powf of the sequence length), past 16 positions.
    "llama-dynamic": dict(_SIZES, architectures=["LlamaForCausalLM"], model_type="llama",
                          max_position_embeddings=16, rope_scaling={"rope_type": "dynamic", "factor": 4.0}),
    # Biases of q, k, v.
    "qwen2": dict(_SIZES, architectures=["Qwen2ForCausalLM"], model_type="qwen2", max_position_embeddings=64,
                  tie_word_embeddings=True),
}


def write_safetensors(tensors, path: Path) -> None:
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, array in tensors.items():
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as handle:
        handle.write(len(text).to_bytes(8, "little") + text)
        for array in tensors.values():
            handle.write(np.ascontiguousarray(array, dtype="<f4").tobytes())


def main() -> None:
    kind, folder = sys.argv[1], Path(sys.argv[2])
    config = CONFIGS[kind]
    if len(sys.argv) > 3:
        config = dict(config, num_hidden_layers=int(sys.argv[3]))
    cfg, arch = architectures.parse(config, folder / "config.json")
    shapes = architectures.weight_shapes(cfg, arch)
    rng = np.random.default_rng(0)
    tensors = {}
    for ours, theirs in sorted(architectures.hf_names(cfg.n_layers, cfg.shared_classifier, arch).items()):
        noise = rng.standard_normal(shapes[ours]).astype(np.float32)
        base = 0.0 if arch.norm_offset else 1.0
        tensors[theirs] = base + 0.1 * noise if "norm" in ours else 0.05 * noise
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    write_safetensors(tensors, folder / "model.safetensors")


if __name__ == "__main__":
    main()
