"""Writes the seed corpora of the Python fuzzers (fuzz/python/corpus/):
small valid checkpoints and tokenizers, and cut-off pieces of the real ones
in data/stories260K; Hugging Face configs, safetensors files and GPTQ
checkpoint folders of a tiny model; inputs of the generation fuzzer.
Deterministic; run it again after a format change.

    .venv/bin/python fuzz/python/make_seeds.py
"""

import json
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "python"))

from gptq_mlir.data.tokenizer import BYTE_OFFSET  # noqa: E402
from gptq_mlir.importers import hf, llama2c  # noqa: E402

DATA = os.path.join(ROOT, "data", "stories260K")
#: fuzz_gptq_checkpoint.SEPARATOR (not imported: that would import the
#: package before the fuzzer instruments it); python/tests/test_fuzz.py
#: checks that the two agree.
SEPARATOR = b"\n--gptq-fuzz-file--\n"


def tiny_checkpoint(shared: bool, version: int) -> bytes:
    """dim 8, 1 layer, 2 query heads over 1 key/value head, 5 tokens, 3 positions."""
    cfg = llama2c.Llama2cConfig(8, 12, 1, 2, 1, 5, 3, shared)
    weights = {}
    for index, (name, shape) in enumerate(llama2c.weight_layout(cfg, 0)):
        count = int(np.prod(shape))
        weights[name] = (np.arange(count, dtype=np.float32).reshape(shape) % 7 - 3) / (index + 4)
    weights["freq_cis_real"], weights["freq_cis_imag"] = llama2c.rope_tables(cfg.head_size, cfg.seq_len)
    return llama2c.serialize_checkpoint(cfg, weights, version)


def tokenizer_file(pieces, scores, max_length: int) -> bytes:
    out = [struct.pack("<i", max_length)]
    for piece, score in zip(pieces, scores):
        out.append(struct.pack("<fi", score, len(piece)) + piece)
    return b"".join(out)


def small_tokenizer() -> bytes:
    """<unk>, BOS, EOS, the 256 byte tokens, then " ", letters and merges."""
    pieces = [b"<unk>", b"\n<s>\n", b"\n</s>\n"] + [b"<0x%02X>" % b for b in range(256)]
    extra = [b" ", b"a", b"b", b" a", b"ab", b" ab", b"\xc3\xa9"]
    scores = [0.0] * len(pieces) + [-float(i) for i in range(len(extra))]
    assert len(pieces) == BYTE_OFFSET + 256
    return tokenizer_file(pieces + extra, scores, 6)


def safetensors_bytes(tensors, metadata=None) -> bytes:
    from safetensors.numpy import save

    return save(tensors, metadata=metadata)


def bf16_safetensors() -> bytes:
    import torch
    from safetensors.torch import save

    return save({"w": torch.arange(6, dtype=torch.float32).reshape(2, 3).to(torch.bfloat16)})


def tiny_hf():
    """A tiny model (dim 8, 1 layer, 2 query heads over 1 key/value head, 5
    tokens) as (config.json's object, tensors by Hugging Face name)."""
    cfg = llama2c.Llama2cConfig(8, 8, 1, 2, 1, 5, 3, True)
    config = {
        "architectures": [hf.ARCHITECTURE], "model_type": "llama", "hidden_size": cfg.dim,
        "intermediate_size": cfg.hidden_dim, "num_hidden_layers": cfg.n_layers,
        "num_attention_heads": cfg.n_heads, "num_key_value_heads": cfg.n_kv_heads, "vocab_size": cfg.vocab_size,
        "max_position_embeddings": cfg.seq_len, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu",
        "tie_word_embeddings": True, "rope_scaling": None, "torch_dtype": "float32",
    }
    tensors = {}
    shapes = hf.weight_shapes(cfg)
    for index, (ours, theirs) in enumerate(sorted(hf.hf_names(cfg.n_layers, True).items())):
        count = int(np.prod(shapes[ours]))
        tensors[theirs] = ((np.arange(count, dtype=np.float32) % 5 - 2) / (index + 3)).reshape(shapes[ours])
    return config, tensors


def tiny_gptq(bits: int):
    """tiny_hf with layer 0's q projection quantized to ``bits`` (one group)."""
    config, tensors = tiny_hf()
    q = "model.layers.0.self_attn.q_proj"
    del tensors[f"{q}.weight"]
    tensors[f"{q}.qweight"] = (np.arange(8 * bits // 32 * 8, dtype=np.int64) * 2654435761 % 2**31).astype(
        np.int32).reshape(8 * bits // 32, 8)
    tensors[f"{q}.qzeros"] = np.full((1, 8 * bits // 32), 0x11111111 & (2**31 - 1), dtype=np.int32)
    tensors[f"{q}.scales"] = np.full((1, 8), 0.125, dtype=np.float16)
    tensors[f"{q}.g_idx"] = np.zeros(8, dtype=np.int32)
    quantization = {"quant_method": "gptq", "bits": bits, "group_size": -1, "desc_act": False, "sym": False,
                    "checkpoint_format": "gptq"}
    config = dict(config, quantization_config=quantization)
    return config, quantization, tensors


def folder_seed(config, quantization, tensors) -> bytes:
    parts = [json.dumps(config, indent=1).encode()]
    if quantization is not None:
        parts.append(json.dumps(quantization).encode())
    else:
        parts.append(b"")  # quantize_config.json empty: the HF reader ignores it
    parts.append(safetensors_bytes(tensors))
    return SEPARATOR.join(parts)


def generation_seeds():
    """Inputs of fuzz_generation.py, in the format its docstring spells:
    the case, the stand-in model's bytes, the case's arguments (table
    indices), then the logits' bytes (0..199 finite, 200 NaN, 201 +Inf,
    202 -Inf, 203 float32's largest, 205 a subnormal)."""
    logits = bytes([100, 120, 110, 90, 140, 100, 130, 80, 101, 99])
    # case; vocabulary 8, seq_len 16, flags (1: no vocabulary, 2: cached, 4: width fault), fault size
    model = bytes([7, 15, 2, 0])
    yield "sampler-subnormal-temperature", bytes([0, 4, 2, 2, 7]) + logits
    yield "sampler-equal-huge", bytes([0, 1, 0, 0, 15]) + bytes([203])
    # temperature, top-p, seed, steps (index 6: 5), stop (1: none), prompt of 3 ids (id + 2)
    yield "generate-greedy-cached", bytes([1]) + model + bytes([0, 0, 0, 6, 1, 3, 3, 4, 5]) + logits
    yield "generate-nan", bytes([1]) + model + bytes([1, 1, 2, 6, 1, 3, 3, 4, 5]) + logits + bytes([200])
    yield "generate-prompt-at-context", bytes([1, 7, 7, 2, 0, 0, 0, 0, 6, 1, 8]) + bytes(range(3, 11)) + logits
    yield "generate-huge-temperature", bytes([1]) + model + bytes([10, 5, 4, 9, 0, 0]) + logits + bytes([203, 205])
    yield "generate-width-fault", bytes([1, 7, 15, 6, 10, 0, 0, 0, 6, 1, 1, 3]) + logits
    yield "generate-no-vocabulary", bytes([1, 7, 0, 3, 0, 3, 0, 1, 7, 1, 2, 3, 4]) + logits
    # count, length, batch, progress, int64, then count x length ids
    yield "perplexity", bytes([2]) + model + bytes([2, 5, 1, 1, 0, 3, 4, 5, 6, 7, 8, 9, 4, 5, 6]) + logits
    yield "perplexity-huge", bytes([2]) + model + bytes([1, 4, 1, 0, 1, 3, 4, 5, 6]) + bytes([203, 204, 100])
    # --temperature 0.8, --top-p 0.9, --seed 42, --steps 5, --prompt "Once upon a time"
    yield "generate-command", bytes([3, 0, 31, 2, 0, 2, 2, 2, 2, 1, 1]) + logits
    # --seqlen 8, --batch 2
    yield "perplexity-command", bytes([4, 0, 31, 0, 0, 2, 1]) + logits
    # What the fuzzer found (python/tests/test_generation.py): @prefill
    # returning no row (flags 8: rows fault, size 0), a negative seed, no windows.
    yield "crash-prefill-no-row", bytes([1, 7, 15, 10, 0, 0, 0, 0, 6, 1, 2, 3, 4]) + logits
    yield "crash-negative-seed", bytes([0, 1, 0, 7, 7]) + logits
    yield "crash-no-windows", bytes([2]) + model + bytes([0, 3, 1, 0, 0]) + logits


def seeds():
    real_checkpoint = open(os.path.join(DATA, "stories260K.bin"), "rb").read()
    real_tokenizer = open(os.path.join(DATA, "tok512.bin"), "rb").read()
    yield "llama2c", "stories260K-head", real_checkpoint[: llama2c.LEGACY_HEADER_BYTES + 64]
    for version in (0, 1):
        for shared in (True, False):
            name = f"tiny-v{version}-{'shared' if shared else 'untied'}"
            yield "llama2c", name, tiny_checkpoint(shared, version)
    yield "llama2c", "v1-header-only", tiny_checkpoint(True, 1)[: llama2c.VERSION1_HEADER_BYTES]
    yield "tokenizer", "tok512", real_tokenizer
    yield "tokenizer", "tok512-head", real_tokenizer[:100]
    yield "tokenizer", "small", small_tokenizer()

    config, tensors = tiny_hf()
    yield "hf_config", "tiny", json.dumps(config, indent=2).encode()
    yield "hf_config", "tiny-gqa-untied", json.dumps(dict(config, num_attention_heads=4, num_key_value_heads=2,
                                                           tie_word_embeddings=False, head_dim=2,
                                                           rope_theta=500000.0, rms_norm_eps=1e-6)).encode()
    yield "hf_config", "quantized", json.dumps(tiny_gptq(4)[0]).encode()
    yield "hf_config", "nested", b'{"a": [1, -2.5e-3, {"b": [true, false, null, "\\u00e9\\n"]}], "c": {}}'
    # The architectures import-hf reads beyond Llama, with the fields that
    # each adds (rotary scaling, windows, soft caps, explicit head sizes).
    architectures = {
        "llama3": {"architectures": ["LlamaForCausalLM"], "rope_scaling": {
            "rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192}},
        "llama-dynamic": {"architectures": ["LlamaForCausalLM"], "rope_scaling": {"type": "dynamic", "factor": 2.0}},
        "mistral": {"architectures": ["MistralForCausalLM"], "model_type": "mistral", "sliding_window": 4},
        "qwen2": {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "use_sliding_window": False,
                  "sliding_window": 32768},
        "qwen3": {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "head_dim": 8},
        "phi3": {"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "sliding_window": 2047},
        "gemma2": {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "head_dim": 8,
                   "query_pre_attn_scalar": 8, "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0,
                   "hidden_activation": "gelu_pytorch_tanh"},
    }
    for name, fields in architectures.items():
        yield "hf_config", name, json.dumps(dict(config, **fields)).encode()

    yield "safetensors", "floats-and-ints", safetensors_bytes(
        {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.arange(4, dtype=np.float16),
         "c": np.arange(3, dtype=np.int32), "d": np.zeros((0, 2), dtype=np.int64)}, metadata={"format": "pt"})
    yield "safetensors", "bf16", bf16_safetensors()
    yield "safetensors", "empty", safetensors_bytes({})
    yield "safetensors", "tiny-model", safetensors_bytes(tensors)
    yield "safetensors", "header-only", safetensors_bytes(tensors)[:200]

    yield "gptq_checkpoint", "gptq-4bit", folder_seed(*tiny_gptq(4))
    yield "gptq_checkpoint", "gptq-8bit", folder_seed(*tiny_gptq(8))
    yield "gptq_checkpoint", "hf-float", folder_seed(config, None, tensors)

    for name, data in generation_seeds():
        yield "generation", name, data


def main() -> None:
    for target, name, data in seeds():
        folder = os.path.join(HERE, "corpus", target)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, name), "wb") as handle:
            handle.write(data)
        print(f"{target}/{name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
