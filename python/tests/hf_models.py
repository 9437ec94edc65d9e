"""Tiny Hugging Face checkpoints of the architectures people quantize, for tests.

Each entry of :data:`CONFIGS` is the ``config.json`` of a real model (the
fields its repository publishes) with its sizes cut down: hidden size 64,
two layers, a 256-token vocabulary, every quantized layer's output a
multiple of 32 (AutoGPTQ needs that at 4 bits). Everything that changes the
computation stays as the model has it: rotary base and scaling, tied or
separate classifier, sliding windows, biases, head norms and explicit head
sizes, Gemma 2's soft caps and ``query_pre_attn_scalar``. A few values are
scaled down with the model so that they matter at test lengths (the sliding
windows, PhiMoE's original context and its rotary factors, one per
frequency), the mixtures of experts keep a few small experts, and each is
marked.

:func:`write_checkpoint` saves random weights (fixed seed, norms around
their identity so that permuting them would show) with transformers'
``save_pretrained`` in float32 or bfloat16; :func:`reference_logits` runs
transformers' own implementation on them. Qwen 3 and Qwen 3 MoE are not in
transformers 4.46: :mod:`qwen3_reference` is a PyTorch implementation of
ours, written from the models' description, and writes and runs their
checkpoints.
"""

import copy
import json
from pathlib import Path
from typing import Any, Dict

import numpy as np

_TINY = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "vocab_size": 256}

#: name -> config.json, with the published fields of each model.
CONFIGS: Dict[str, Dict[str, Any]] = {
    # meta-llama/Llama-3.2-1B
    "llama-3.2-1b": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "attention_bias": False,
        "attention_dropout": 0.0, "bos_token_id": 128000, "eos_token_id": 128001, "head_dim": 16,
        "hidden_act": "silu", "initializer_range": 0.02, "max_position_embeddings": 131072, "mlp_bias": False,
        "pretraining_tp": 1, "rms_norm_eps": 1e-05,
        "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "rope_theta": 500000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16", "use_cache": True,
    },
    # meta-llama/Llama-3.1-8B
    "llama-3.1-8b": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "attention_bias": False,
        "attention_dropout": 0.0, "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu",
        "initializer_range": 0.02, "max_position_embeddings": 131072, "mlp_bias": False, "pretraining_tp": 1,
        "rms_norm_eps": 1e-05,
        "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "rope_theta": 500000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True,
    },
    # TinyLlama/TinyLlama-1.1B-Chat-v1.0
    "tinyllama": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "bos_token_id": 1, "eos_token_id": 2,
        "hidden_act": "silu", "initializer_range": 0.02, "max_position_embeddings": 2048, "pretraining_tp": 1,
        "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 10000.0, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "use_cache": True,
    },
    # HuggingFaceTB/SmolLM2-135M
    "smollm2": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "attention_bias": False,
        "attention_dropout": 0.0, "bos_token_id": 0, "eos_token_id": 0, "hidden_act": "silu",
        "initializer_range": 0.041666666666666664, "max_position_embeddings": 8192, "mlp_bias": False,
        "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 100000,
        "tie_word_embeddings": True, "torch_dtype": "bfloat16", "use_cache": True,
    },
    # Qwen/Qwen2.5-0.5B
    "qwen2.5": {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "attention_dropout": 0.0,
        "bos_token_id": 151643, "eos_token_id": 151643, "hidden_act": "silu", "initializer_range": 0.02,
        "max_position_embeddings": 32768, "max_window_layers": 24, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
        "sliding_window": 32768, "tie_word_embeddings": True, "torch_dtype": "bfloat16", "use_cache": True,
        "use_mrope": False, "use_sliding_window": False,
    },
    # mistralai/Mistral-7B-v0.3; v0.1's window of 4096, cut to 16 to act at test lengths.
    "mistral": {
        "architectures": ["MistralForCausalLM"], "model_type": "mistral", "attention_dropout": 0.0,
        "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "initializer_range": 0.02,
        "max_position_embeddings": 32768, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "sliding_window": 16,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True,
    },
    # microsoft/Phi-3-mini-4k-instruct; its window of 2047, cut to 24.
    "phi-3-mini": {
        "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "attention_bias": False,
        "attention_dropout": 0.0, "bos_token_id": 1, "embd_pdrop": 0.0, "eos_token_id": 32000,
        "hidden_act": "silu", "initializer_range": 0.02, "max_position_embeddings": 4096,
        "original_max_position_embeddings": 4096, "pad_token_id": 255, "resid_pdrop": 0.0, "rms_norm_eps": 1e-05,
        "rope_scaling": None, "rope_theta": 10000.0, "sliding_window": 24, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "use_cache": True,
    },
    # google/gemma-2-2b; head_dim 256 and query_pre_attn_scalar 256 cut to
    # 32 (still not hidden / heads = 16), the window of 4096 cut to 16, and
    # the attention scores' cap of 50 cut to 1 (random weights' scores are
    # too small for 50 to bend them).
    "gemma-2": {
        "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "attention_bias": False,
        "attention_dropout": 0.0, "attn_logit_softcapping": 1.0, "bos_token_id": 2, "cache_implementation": "hybrid",
        "eos_token_id": 1, "final_logit_softcapping": 30.0, "head_dim": 32, "hidden_act": "gelu_pytorch_tanh",
        "hidden_activation": "gelu_pytorch_tanh", "initializer_range": 0.02, "max_position_embeddings": 8192,
        "pad_token_id": 0, "query_pre_attn_scalar": 32, "rms_norm_eps": 1e-06, "rope_theta": 10000.0,
        "sliding_window": 16, "torch_dtype": "float32", "use_cache": True,
    },
    # Qwen/Qwen3-0.6B; head_dim 128 with hidden 1024 / 16 heads = 64, cut to 32 with 64 / 4 = 16.
    "qwen3": {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "attention_bias": False,
        "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 32,
        "hidden_act": "silu", "initializer_range": 0.02, "max_position_embeddings": 40960, "max_window_layers": 28,
        "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000, "sliding_window": None,
        "tie_word_embeddings": True, "torch_dtype": "bfloat16", "use_cache": True, "use_sliding_window": False,
    },
    # mistralai/Mixtral-8x7B-v0.1 (8 experts, 2 per token).
    "mixtral": {
        "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "attention_dropout": 0.0,
        "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "initializer_range": 0.02,
        "max_position_embeddings": 32768, "num_experts_per_tok": 2, "num_local_experts": 8,
        "output_router_logits": False, "rms_norm_eps": 1e-05, "rope_theta": 1e6, "router_aux_loss_coef": 0.02,
        "sliding_window": None, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True,
    },
    # Qwen/Qwen1.5-MoE-A2.7B; its 60 experts cut to 8 (4 per token, as
    # published), moe_intermediate_size 1408 and shared_expert_intermediate_size
    # 5632 to 32 and 96, and decoder_sparse_step 1 set to 2, so that layer 0
    # is dense and layer 1 sparse.
    "qwen1.5-moe": {
        "architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe", "attention_dropout": 0.0,
        "bos_token_id": 151643, "decoder_sparse_step": 2, "eos_token_id": 151643, "hidden_act": "silu",
        "initializer_range": 0.02, "max_position_embeddings": 8192, "max_window_layers": 21,
        "moe_intermediate_size": 32, "norm_topk_prob": False, "num_experts": 8, "num_experts_per_tok": 4,
        "output_router_logits": False, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
        "router_aux_loss_coef": 0.001, "shared_expert_intermediate_size": 96, "sliding_window": 32768,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True, "use_sliding_window": False,
    },
    # allenai/OLMoE-1B-7B-0924; its 64 experts, 8 per token, cut to 8, 2 per token.
    "olmoe": {
        "architectures": ["OlmoeForCausalLM"], "model_type": "olmoe", "attention_bias": False,
        "attention_dropout": 0.0, "clip_qkv": None, "eos_token_id": 50279, "hidden_act": "silu",
        "initializer_range": 0.02, "max_position_embeddings": 4096, "norm_topk_prob": False, "num_experts": 8,
        "num_experts_per_tok": 2, "output_router_logits": False, "pad_token_id": 1, "rms_norm_eps": 1e-05,
        "rope_scaling": None, "rope_theta": 10000.0, "router_aux_loss_coef": 0.01, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "use_cache": True,
    },
    # Qwen/Qwen3-30B-A3B; its 128 experts, 8 per token, cut to 8, 4 per
    # token, moe_intermediate_size 768 to 32, head_dim 128 to 32 as Qwen 3's.
    "qwen3-moe": {
        "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "attention_bias": False,
        "attention_dropout": 0.0, "bos_token_id": 151643, "decoder_sparse_step": 1, "eos_token_id": 151645,
        "head_dim": 32, "hidden_act": "silu", "initializer_range": 0.02, "max_position_embeddings": 40960,
        "max_window_layers": 48, "mlp_only_layers": [], "moe_intermediate_size": 32, "norm_topk_prob": True,
        "num_experts": 8, "num_experts_per_tok": 4, "output_router_logits": False, "rms_norm_eps": 1e-06,
        "rope_scaling": None, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001, "sliding_window": None,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True, "use_sliding_window": False,
    },
    # microsoft/Phi-3.5-MoE-instruct; its 16 experts cut to 8 (2 per token,
    # as sparsemixer routes), its window of 131072 cut to 32, its
    # original_max_position_embeddings of 4096 (at the top and in
    # rope_scaling) cut to 64, the tests' length, where transformers takes
    # the long factors but still the short mscale (512 positions take both
    # long), and the factor lists of 32 cut to their first 8 (head_dim 16).
    "phimoe": {
        "architectures": ["PhiMoEForCausalLM"], "model_type": "phimoe", "attention_bias": True,
        "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 32000, "hidden_act": "silu",
        "hidden_dropout": 0.0, "initializer_range": 0.02, "input_jitter_noise": 0.01, "lm_head_bias": True,
        "max_position_embeddings": 131072, "num_experts_per_tok": 2, "num_local_experts": 8,
        "original_max_position_embeddings": 64, "output_router_logits": False, "rms_norm_eps": 1e-05,
        "rope_scaling": {
            "long_factor": [1.0199999809265137, 1.0299999713897705, 1.0399999618530273, 1.0499999523162842,
                            1.0499999523162842, 1.0499999523162842, 1.059999942779541, 1.059999942779541],
            "long_mscale": 1.243163121016122, "original_max_position_embeddings": 64,
            "short_factor": [1.0, 1.0399999618530273, 1.0399999618530273, 1.0399999618530273, 1.0499999523162842,
                             1.0499999523162842, 1.0499999523162842, 1.0499999523162842],
            "short_mscale": 1.243163121016122, "type": "longrope",
        },
        "rope_theta": 10000.0, "router_aux_loss_coef": 0.0, "router_jitter_noise": 0.01, "sliding_window": 32,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True,
    },
}
for _config in CONFIGS.values():
    _config.update(_TINY)

#: Kinds that transformers 4.46 lacks, which :mod:`qwen3_reference` writes and runs.
OURS = ("qwen3", "qwen3_moe")

#: The configs whose rotary scaling changes positions beyond the original
#: context: their tests run at 2048 positions.
SCALED = ("llama-3.2-1b", "llama-3.1-8b")


def config(name: str) -> Dict[str, Any]:
    return copy.deepcopy(CONFIGS[name])


def _randomize(model, gemma: bool, seed: int) -> None:
    """Random weights: N(0, 0.05) for matrices and biases, norms' weights
    around their identity (1, or 0 for Gemma's 1 + w)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in sorted(model.named_parameters()):
            noise = torch.randn(parameter.shape, generator=generator)
            if "norm" in name and not name.endswith(".bias"):
                parameter.copy_((0.0 if gemma else 1.0) + 0.1 * noise)
            else:
                parameter.copy_(0.05 * noise)


def write_checkpoint(name: str, folder: Path, dtype: str = "float32", seed: int = 0,
                     config_json: Dict[str, Any] = None) -> Path:
    """Save a random model of ``name``'s config (or ``config_json``) in
    ``folder`` in ``dtype`` ("float32" or "bfloat16")."""
    config_json = config(name) if config_json is None else config_json
    folder.mkdir(parents=True, exist_ok=True)
    if config_json["model_type"] in OURS:
        import qwen3_reference

        return qwen3_reference.write_checkpoint(config_json, folder, dtype, seed)
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    fields = {key: value for key, value in config_json.items() if key != "model_type"}
    hf_config = AutoConfig.for_model(config_json["model_type"], **fields)
    model = AutoModelForCausalLM.from_config(hf_config, attn_implementation="eager")
    _randomize(model, config_json["model_type"] == "gemma2", seed)
    model = model.to(torch.bfloat16 if dtype == "bfloat16" else torch.float32)
    model.save_pretrained(folder, safe_serialization=True)
    # The published fields as they were (save_pretrained adds transformers'
    # own and rewrites some); the tensors are transformers'.
    saved = json.loads((folder / "config.json").read_text())
    saved.update(config_json, torch_dtype=dtype)
    (folder / "config.json").write_text(json.dumps(saved, indent=2))
    return folder


def reference_logits(folder: Path, tokens: np.ndarray) -> np.ndarray:
    """Logits ``[B, S, V]`` of the checkpoint in ``folder`` computed by
    transformers in float32 (eager attention), or by our Qwen 3 (MoE) reference."""
    import torch

    config_json = json.loads((folder / "config.json").read_text())
    if config_json["model_type"] in OURS:
        import qwen3_reference

        return qwen3_reference.logits(folder, tokens)
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32, attn_implementation="eager")
    with torch.no_grad():
        return model.eval()(torch.from_numpy(tokens).long(), use_cache=False).logits.numpy()


def relative_error(ours: np.ndarray, theirs: np.ndarray) -> float:
    """The largest logit difference relative to the largest logit."""
    return float(np.abs(ours - theirs).max() / np.abs(theirs).max())


def main() -> None:
    """Print each config's logit agreement with its reference, as
    test_architectures.py measures it (the table of docs/hf-import.md)."""
    import sys
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from gptq_mlir.cli.commands import main as cli
    from gptq_mlir.runtime.model import Model

    print("| config | architectures | positions | dtype | max abs logit error / max abs logit | same top token |")
    print("| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as scratch:
        for name in CONFIGS:
            for dtype in ("float32", "bfloat16"):
                folder = write_checkpoint(name, Path(scratch) / name / dtype, dtype)
                module = Path(scratch) / name / f"{dtype}.mlir"
                if cli(["import-hf", str(folder), "-o", str(module)]) != 0:
                    raise SystemExit(1)
                seq = 2048 if name in SCALED else 64
                tokens = np.random.default_rng(len(name)).integers(0, 256, size=(1, seq)).astype(np.int32)
                ours, theirs = Model(module).logits(tokens), reference_logits(folder, tokens)
                agree = float((ours.argmax(-1) == theirs.argmax(-1)).mean())
                print(f"| {name} | {CONFIGS[name]['architectures'][0]} | {seq} | {dtype} | "
                      f"{relative_error(ours, theirs):.1e} | {agree:.0%} |", flush=True)


if __name__ == "__main__":
    main()
