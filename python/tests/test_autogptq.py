"""AutoGPTQ, the engine export-gptq writes for, loads our checkpoints and
computes the logits our module does.

A tiny model made with transformers (random weights, fixed seed) is saved
with save_pretrained, imported by import-hf, quantized by gptq-opt at 4
bits in groups of 32 with and without act-order, and exported in both
checkpoint formats. AutoGPTQ 0.7.1 (``from_quantized`` on the CPU, its
PyTorch path) loads each checkpoint, and its logits on random ids equal
those of import-gptq's module run by gptq-run within 1e-5 of the largest
logit. Both dequantize in float32: AutoGPTQ widens the float16 scales to
the model's float32 when it loads them and computes
``scales * (codes - zeros)`` in float32, as ``gptq.dequantize`` does, so the
weights are the same and only the order of the sums differs (about 1e-6
measured, docs/gptq-checkpoints.md).

AutoGPTQ 0.7.1 predates ``checkpoint_format``: it ignores the key and reads
every qzeros as v1's ``zero - 1``. A gptq_v2 checkpoint is therefore loaded
after subtracting one from each of its zero-point fields, which is what
GPTQModel does to run a v2 checkpoint on v1 kernels; loaded as it is, it
gives other logits (checked, so that an AutoGPTQ that reads the key is
noticed).

Architectures are entries of :data:`ARCHITECTURES` (a transformers config
and model class and the config's fields); every quantized layer's outputs
must be a multiple of 32, which AutoGPTQ needs at 4 bits.
"""

import contextlib
import json
import math
import re
import shutil
from pathlib import Path
from typing import Dict, Iterator

import numpy as np
import pytest

transformers = pytest.importorskip("transformers", reason="transformers is not installed (scripts/test-deps.sh)")
pytest.importorskip("auto_gptq", reason="AutoGPTQ is not installed (scripts/test-deps.sh)")
import torch  # noqa: E402  (AutoGPTQ needs it)

from gptq_mlir.checkpoints import gptq  # noqa: E402
from gptq_mlir.cli.commands import main  # noqa: E402
from gptq_mlir.runtime import runner
from gptq_mlir.runtime.model import Model  # noqa: E402
from gptq_reader import read_safetensors, zero_points  # noqa: E402

BITS, GROUP_SIZE = 4, 32
#: The agreement asked of AutoGPTQ's logits, relative to the largest one.
TOLERANCE = 1e-5
_SIZES = {
    "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "vocab_size": 256, "max_position_embeddings": 64, "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0, "hidden_act": "silu", "torch_dtype": "float32", "bos_token_id": 1, "eos_token_id": 2,
}
#: Architectures by name: transformers' config and model classes, the
#: config's fields (tie_word_embeddings is a parameter of the test).
ARCHITECTURES: Dict[str, Dict] = {
    "llama": {
        "config": "LlamaConfig", "model": "LlamaForCausalLM",
        "fields": dict(_SIZES, attention_bias=False, mlp_bias=False, rope_scaling=None),
    },
    # A window shorter than the test's sequences, so that it acts.
    "mistral": {"config": "MistralConfig", "model": "MistralForCausalLM", "fields": dict(_SIZES, sliding_window=8)},
    # q, k and v biases, which the export stores beside the quantized layers.
    "qwen2": {
        "config": "Qwen2Config", "model": "Qwen2ForCausalLM",
        "fields": dict(_SIZES, rope_theta=1000000.0, use_sliding_window=False),
    },
    # 4 experts, 2 per token: each expert exported under its own names, the
    # router float.
    "mixtral": {
        "config": "MixtralConfig", "model": "MixtralForCausalLM",
        "fields": dict(_SIZES, num_local_experts=4, num_experts_per_tok=2),
    },
}
SEQUENCES, LENGTH = 2, 16


def _random_model(architecture: str, tied: bool, folder: Path) -> Path:
    """A transformers model of ``architecture`` with random weights from a
    fixed seed (matrices scaled by 1/sqrt(fan-in), norms near 1, so that
    logits spread over a few units), saved by save_pretrained."""
    spec = ARCHITECTURES[architecture]
    config = getattr(transformers, spec["config"])(**spec["fields"], tie_word_embeddings=tied)
    model = getattr(transformers, spec["model"])(config).eval()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for _, parameter in sorted(model.named_parameters()):
            noise = torch.randn(parameter.shape, generator=generator)
            parameter.copy_(1 + 0.1 * noise if parameter.ndim == 1 else noise / math.sqrt(parameter.shape[1]))
    model.save_pretrained(folder, safe_serialization=True)
    return folder


@pytest.fixture(scope="module")
def quantized(tmp_path_factory, gptq_opt, gptq_run):
    """quantized(architecture, tied, act_order): the random model imported
    by import-hf and quantized by gptq-opt, made once per key."""
    made: Dict[tuple, Path] = {}

    def make(architecture: str, tied: bool, act_order: bool) -> Path:
        key = (architecture, tied, act_order)
        if key not in made:
            root = tmp_path_factory.mktemp(f"{architecture}-{'tied' if tied else 'untied'}")
            hf_model = root / "hf.mlir"
            assert main(["import-hf", str(_random_model(architecture, tied, root / "hf")), "-o", str(hf_model)]) == 0
            calibration = root / "calib.npy"
            vocab = ARCHITECTURES[architecture]["fields"]["vocab_size"]
            np.save(calibration, np.random.default_rng(1).integers(0, vocab, size=(8, 32)).astype(np.int32))
            order = "true" if act_order else "false"
            options = f"calibration={calibration} bits={BITS} group-size={GROUP_SIZE} act-order={order}"
            made[key] = root / f"q-{act_order}.mlir"
            runner.run_opt(hf_model, made[key], [f"--gptq-quantize-model={options}"])
        return made[key]

    return make


#: The checkpoint format an import records in its copy of config.json
#: (gptq.hf_config), which export-gptq reads and nothing compiled does.
_FORMAT_RECORD = re.compile(r'\\22checkpoint_format\\22: \\22gptq(_v2)?\\22')


@pytest.fixture(scope="module")
def our_logits():
    """ours(key, imported, tokens): the logits of import-gptq's module,
    computed once for the gptq and gptq_v2 checkpoints of one quantized
    model when their imports are the same module: text equal but for the
    recorded checkpoint format, every quantized layer's packed words,
    permutation, scales, zeros and g_idx and every float weight equal to the
    bit. Modules that differ in anything else are run each."""
    seen: Dict[tuple, tuple] = {}

    def ours(key: tuple, imported: Path, tokens: np.ndarray) -> np.ndarray:
        text = _FORMAT_RECORD.sub("", imported.read_text())
        model = gptq.read_rewritten_model(imported)
        if key in seen:
            seen_text, seen_model, seen_tokens, logits = seen[key]
            if seen_text == text and np.array_equal(seen_tokens, tokens) and _same_weights(seen_model, model):
                return logits
        logits = Model(imported).logits(tokens)
        seen[key] = (text, model, tokens, logits)
        return logits

    return ours


def _same_weights(a: gptq.RewrittenModel, b: gptq.RewrittenModel) -> bool:
    """Whether two rewritten models hold the same quantized layers and float
    weights, to the bit."""
    if sorted(a.layers) != sorted(b.layers) or sorted(a.weights) != sorted(b.weights):
        return False

    def same(x, y) -> bool:
        return (x is None and y is None) or (x is not None and y is not None and np.array_equal(x, y))

    fields = ("qweight", "perm", "scales", "zeros", "g_idx")
    return all(same(getattr(a.layers[name], field), getattr(b.layers[name], field))
               for name in a.layers for field in fields) \
        and all(same(a.weights[name], b.weights[name]) for name in a.weights)


@contextlib.contextmanager
def _torch_init_kept() -> Iterator[None]:
    """from_quantized replaces torch's weight initializers with no-ops, for
    the rest of the process; they are put back, for the tests that follow."""
    saved = {name: getattr(torch.nn.init, name) for name in ("kaiming_uniform_", "uniform_", "normal_")}
    init_weights = transformers.modeling_utils._init_weights
    try:
        yield
    finally:
        for name, function in saved.items():
            setattr(torch.nn.init, name, function)
        transformers.modeling_utils._init_weights = init_weights


def _autogptq_logits(folder: Path, tokens: np.ndarray, act_order: bool, tied: bool) -> np.ndarray:
    """AutoGPTQ's logits for ``tokens``, from the checkpoint in ``folder``
    loaded on the CPU in float32 (its PyTorch path: no CUDA, Triton,
    ExLlama or Marlin kernel)."""
    from auto_gptq import AutoGPTQForCausalLM

    with _torch_init_kept():
        model = AutoGPTQForCausalLM.from_quantized(
            str(folder), device="cpu", torch_dtype=torch.float32, use_triton=False, disable_exllama=True,
            disable_exllamav2=True, use_safetensors=True, model_basename="model",
        )
    layer = model.model.model.layers[0].self_attn.q_proj
    # qlinear_cuda reads g_idx (desc_act), qlinear_cuda_old assumes j / group_size.
    assert layer.QUANT_TYPE == ("cuda" if act_order else "cuda-old") and not layer.autogptq_cuda_available
    assert layer.scales.dtype == torch.float32
    head, embeddings = model.model.lm_head.weight, model.model.model.embed_tokens.weight
    assert torch.equal(head, embeddings) == tied
    with torch.no_grad():
        return model.model(input_ids=torch.from_numpy(tokens.astype(np.int64))).logits.numpy()


def _as_v1(v2: Path, v1: Path) -> Path:
    """A copy of the gptq_v2 checkpoint ``v2`` with one subtracted from
    every zero-point field of qzeros, as v1 stores them (no field is 0,
    so no subtraction borrows from the next)."""
    from safetensors.numpy import save_file

    shutil.copytree(v2, v1)
    tensors = read_safetensors(v2 / "model.safetensors")
    ones = np.uint32(sum(1 << (BITS * k) for k in range(32 // BITS)))
    for name in [name for name in tensors if name.endswith(".qzeros")]:
        assert zero_points(tensors, name[: -len(".qzeros")], BITS, "gptq_v2").min() >= 1, name
        tensors[name] = (tensors[name].view(np.uint32) - ones).view(np.int32)
    save_file({name: np.ascontiguousarray(array) for name, array in tensors.items()}, str(v1 / "model.safetensors"),
              metadata={"format": "pt"})
    for config_name in ("config.json", "quantize_config.json"):
        path = v1 / config_name
        config = json.loads(path.read_text())
        (config.get("quantization_config", config))["checkpoint_format"] = "gptq"
        path.write_text(json.dumps(config))
    return v1


def _relative(ours: np.ndarray, theirs: np.ndarray) -> float:
    """The largest difference, relative to the largest of ``theirs``."""
    return float(np.abs(ours - theirs).max() / np.abs(theirs).max())


@pytest.mark.parametrize("checkpoint_format", ["gptq", "gptq_v2"])
@pytest.mark.parametrize("act_order", [False, True], ids=["groups", "act-order"])
@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
@pytest.mark.parametrize("architecture", sorted(ARCHITECTURES))
def test_autogptq_logits(tmp_path, quantized, our_logits, architecture, tied, act_order, checkpoint_format):
    module = quantized(architecture, tied, act_order)
    folder = tmp_path / "checkpoint"
    assert main(["export-gptq", str(module), "--out", str(folder), "--format", checkpoint_format]) == 0
    config = json.loads((folder / "config.json").read_text())
    assert config["tie_word_embeddings"] is tied
    assert config["quantization_config"]["desc_act"] is act_order
    imported = tmp_path / "imported.mlir"
    assert main(["import-gptq", str(folder), "-o", str(imported)]) == 0
    vocab = ARCHITECTURES[architecture]["fields"]["vocab_size"]
    tokens = np.random.default_rng(2).integers(0, vocab, size=(SEQUENCES, LENGTH)).astype(np.int32)
    ours = our_logits((architecture, tied, act_order), imported, tokens)
    loaded = folder if checkpoint_format == "gptq" else _as_v1(folder, tmp_path / "as-v1")
    theirs = _autogptq_logits(loaded, tokens, act_order, tied)
    assert theirs.shape == ours.shape
    np.testing.assert_allclose(ours, theirs, rtol=TOLERANCE, atol=TOLERANCE * np.abs(theirs).max())
    if checkpoint_format == "gptq_v2":
        # AutoGPTQ 0.7.1 reads the v2 zeros as v1's, one too high.
        assert _relative(ours, _autogptq_logits(folder, tokens, act_order, tied)) > 1e-2
