"""Write a random-weight Hugging Face checkpoint with the real config.json of
Llama-3.2-1B, Llama-3.1-8B, SmolLM2-135M, Mixtral-8x7B or Qwen3-30B-A3B
(bfloat16 safetensors shards and an index), for bench/bench_scale.py,
bench/bench_moe_forward.py and bench/bench_gptq_tools.py. Not a test, and
nothing it writes is committed.

    PYTHONPATH=python .venv/bin/python bench/make_hf_checkpoint.py llama-3.2-1b /tmp/llama-1b
    PYTHONPATH=python .venv/bin/python bench/make_hf_checkpoint.py llama-3.2-1b /tmp/llama-1b-4 --layers 4
    PYTHONPATH=python .venv/bin/python bench/make_hf_checkpoint.py llama-3.1-8b /tmp/llama-8b
    PYTHONPATH=python .venv/bin/python bench/make_hf_checkpoint.py smollm2-135m /tmp/smollm2-135m
    PYTHONPATH=python .venv/bin/python bench/make_hf_checkpoint.py mixtral-8x7b /tmp/mixtral-2 --layers 2
    PYTHONPATH=python .venv/bin/python bench/make_hf_checkpoint.py qwen3-30b-a3b /tmp/qwen3moe-4 --layers 4

Weights are N(0, 0.02) (norms 1 + N(0, 0.02)), rounded to bfloat16, from a
fixed seed per tensor, so the same command writes the same bytes. The
mixtures' routers are N(0, 0.02) too, which routes near uniformly. Tensors
are made and written one at a time (at most one tensor, about 1 GB for the
8B's embedding, in memory); shards hold at most --shard-gb each, as
transformers' save_pretrained splits them. 2.5 GB for the 1B, 16 GB for the
8B, 0.27 GB for SmolLM2-135M; cut to N layers, Mixtral-8x7B is 0.52 + 2.90 N
GB (6.33 GB at 2 layers) and Qwen3-30B-A3B 1.24 + 1.25 N GB (6.24 GB at 4).
"""

import argparse
import json
import struct
import sys
import zlib
from pathlib import Path

import numpy as np

#: The published config.json fields (meta-llama/Llama-3.2-1B, Llama-3.1-8B,
#: HuggingFaceTB/SmolLM2-135M, mistralai/Mixtral-8x7B-v0.1, Qwen/Qwen3-30B-A3B;
#: python/tests/hf_models.py keeps the same fields at test sizes).
CONFIGS = {
    "llama-3.2-1b": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "attention_bias": False,
        "attention_dropout": 0.0, "bos_token_id": 128000, "eos_token_id": 128001, "head_dim": 64,
        "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 8192,
        "max_position_embeddings": 131072, "mlp_bias": False, "num_attention_heads": 32,
        "num_hidden_layers": 16, "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
        "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "rope_theta": 500000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16", "use_cache": True,
        "vocab_size": 128256,
    },
    "llama-3.1-8b": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "attention_bias": False,
        "attention_dropout": 0.0, "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu",
        "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
        "max_position_embeddings": 131072, "mlp_bias": False, "num_attention_heads": 32,
        "num_hidden_layers": 32, "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
        "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "rope_theta": 500000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True,
        "vocab_size": 128256,
    },
    "smollm2-135m": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "attention_bias": False,
        "attention_dropout": 0.0, "bos_token_id": 0, "eos_token_id": 0, "hidden_act": "silu",
        "hidden_size": 576, "initializer_range": 0.041666666666666664, "intermediate_size": 1536,
        "max_position_embeddings": 8192, "mlp_bias": False, "num_attention_heads": 9,
        "num_hidden_layers": 30, "num_key_value_heads": 3, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
        "rope_scaling": None, "rope_theta": 100000, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
        "use_cache": True, "vocab_size": 49152,
    },
    "mixtral-8x7b": {
        "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "attention_dropout": 0.0,
        "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 4096,
        "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 32768,
        "num_attention_heads": 32, "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8,
        "num_local_experts": 8, "output_router_logits": False, "rms_norm_eps": 1e-05, "rope_theta": 1e6,
        "router_aux_loss_coef": 0.02, "sliding_window": None, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "use_cache": True, "vocab_size": 32000,
    },
    "qwen3-30b-a3b": {
        "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "attention_bias": False,
        "attention_dropout": 0.0, "bos_token_id": 151643, "decoder_sparse_step": 1, "eos_token_id": 151645,
        "head_dim": 128, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
        "intermediate_size": 6144, "max_position_embeddings": 40960, "max_window_layers": 48,
        "mlp_only_layers": [], "moe_intermediate_size": 768, "norm_topk_prob": True, "num_attention_heads": 32,
        "num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4,
        "output_router_logits": False, "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000.0,
        "router_aux_loss_coef": 0.001, "sliding_window": None, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "use_cache": True, "use_sliding_window": False, "vocab_size": 151936,
    },
}


def sparse(config: dict, layer: int) -> bool:
    """Whether layer ``layer``'s feed-forward layer is a mixture of experts:
    every layer of Mixtral; Qwen MoE's unless ``mlp_only_layers`` lists it or
    ``decoder_sparse_step`` skips it (transformers' rule)."""
    if config["model_type"] == "mixtral":
        return True
    if config["model_type"] != "qwen3_moe":
        return False
    return layer not in config["mlp_only_layers"] and (layer + 1) % config["decoder_sparse_step"] == 0


def feed_forward(config: dict, p: str, layer: int):
    """(name, shape) of layer ``layer``'s feed-forward weights (``p`` its prefix)."""
    hidden = config["hidden_size"]
    if not sparse(config, layer):
        inter = config["intermediate_size"]
        yield p + "mlp.gate_proj.weight", (inter, hidden)
        yield p + "mlp.up_proj.weight", (inter, hidden)
        yield p + "mlp.down_proj.weight", (hidden, inter)
        return
    if config["model_type"] == "mixtral":
        experts, inter, module = config["num_local_experts"], config["intermediate_size"], "block_sparse_moe"
        gate, up, down = "w1", "w3", "w2"
    else:
        experts, inter, module = config["num_experts"], config["moe_intermediate_size"], "mlp"
        gate, up, down = "gate_proj", "up_proj", "down_proj"
    yield p + f"{module}.gate.weight", (experts, hidden)
    for e in range(experts):
        q = p + f"{module}.experts.{e}."
        yield q + f"{gate}.weight", (inter, hidden)
        yield q + f"{up}.weight", (inter, hidden)
        yield q + f"{down}.weight", (hidden, inter)


def tensors(config: dict):
    """(name, shape) of every tensor, in the order save_pretrained writes them."""
    hidden = config["hidden_size"]
    head = config.get("head_dim") or hidden // config["num_attention_heads"]
    q, kv = config["num_attention_heads"] * head, config["num_key_value_heads"] * head
    yield "model.embed_tokens.weight", (config["vocab_size"], hidden)
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        yield p + "input_layernorm.weight", (hidden,)
        yield p + "self_attn.q_proj.weight", (q, hidden)
        yield p + "self_attn.k_proj.weight", (kv, hidden)
        yield p + "self_attn.v_proj.weight", (kv, hidden)
        yield p + "self_attn.o_proj.weight", (hidden, q)
        if config["model_type"] == "qwen3_moe":
            yield p + "self_attn.q_norm.weight", (head,)
            yield p + "self_attn.k_norm.weight", (head,)
        yield p + "post_attention_layernorm.weight", (hidden,)
        yield from feed_forward(config, p, i)
    yield "model.norm.weight", (hidden,)
    if not config["tie_word_embeddings"]:
        yield "lm_head.weight", (config["vocab_size"], hidden)


def bfloat16(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to bfloat16 (to nearest, ties to even), as bits."""
    bits = values.view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def random_tensor(name: str, shape) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    values = rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)
    if name.endswith("norm.weight"):
        values += np.float32(1.0)
    return bfloat16(values)


def write_shard(path: Path, names) -> None:
    """One safetensors file of the tensors ``names`` ((name, shape) pairs)."""
    header, offset = {}, 0
    for name, shape in names:
        size = 2 * int(np.prod(shape))
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)) + text)
        for name, shape in names:
            out.write(random_tensor(name, shape).tobytes())


def write_checkpoint(config: dict, out: Path, shard_gb: float = 5.0) -> int:
    """Write the checkpoint of ``config`` (a config.json as a dict) to the
    folder ``out``; its bytes of bfloat16."""
    out.mkdir(parents=True, exist_ok=True)
    shards, current, size = [], [], 0
    for name, shape in tensors(config):
        bytes_ = 2 * int(np.prod(shape))
        if current and size + bytes_ > shard_gb * 1e9:
            shards.append(current)
            current, size = [], 0
        current.append((name, shape))
        size += bytes_
    shards.append(current)
    weight_map, total = {}, 0
    for i, names in enumerate(shards):
        file = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        write_shard(out / file, names)
        for name, shape in names:
            weight_map[name] = file
            total += 2 * int(np.prod(shape))
        print(f"wrote {out / file}", file=sys.stderr)
    (out / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2))
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True))
    return total


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", choices=sorted(CONFIGS))
    parser.add_argument("out", type=Path, help="folder to write (made if missing)")
    parser.add_argument("--layers", type=int, help="keep only the first N layers (the config says N)")
    parser.add_argument("--shard-gb", type=float, default=5.0, help="most GB per shard (default 5)")
    args = parser.parse_args(argv)
    config = dict(CONFIGS[args.model])
    if args.layers is not None:
        config["num_hidden_layers"] = args.layers
    total = write_checkpoint(config, args.out, args.shard_gb)
    print(f"{args.out}: {args.model}, {config['num_hidden_layers']} layers, {total / 1e9:.2f} GB of bfloat16",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
