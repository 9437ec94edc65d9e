"""import-hf on the architectures people quantize (hf_models.py: real
config.json fields, tiny sizes, random weights): logits equal to
transformers' own implementation (Qwen 3 and Qwen 3 MoE: to our PyTorch
implementation), at 2048 positions for the Llama 3 configs, whose rotary
scaling matters there, and at 512 for the mixtures of experts, whose
experts then get many tokens each; then 4-bit quantization, export-gptq and
import-gptq of each.

The transformers tests skip without transformers (scripts/test-deps.sh
installs it); the Qwen 3 and Qwen 3 MoE ones need only torch."""

import copy
import json
import re
import shutil
from pathlib import Path
from typing import Any, Dict, List, Tuple

import numpy as np
import pytest

import hf_models
from gptq_mlir.checkpoints import gptq
from gptq_mlir.cli.commands import main
from gptq_mlir.importers import architectures
from gptq_mlir.runtime import runner
from gptq_mlir.runtime.model import Model
from hf_models import CONFIGS, SCALED, relative_error

#: Agreement with the reference implementation, float32 throughout.
TOLERANCE = 1e-5


def _needs_reference(name: str) -> None:
    if CONFIGS[name]["model_type"] not in hf_models.OURS:
        pytest.importorskip("transformers", reason="transformers is not installed (scripts/test-deps.sh installs it)")


def _tokens(name: str, batch: int = 2) -> np.ndarray:
    """Token ids long enough for what the config changes: 2048 positions
    for scaled rotary embeddings (1 sequence), else 64 (past every window)."""
    seq = 2048 if name in SCALED else 64
    rng = np.random.default_rng(len(name))
    return rng.integers(0, CONFIGS[name]["vocab_size"], size=(1 if name in SCALED else batch, seq)).astype(np.int32)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """name -> its float32 checkpoint folder, written once."""
    folders = {}

    def get(name: str, dtype: str = "float32") -> Path:
        if (name, dtype) not in folders:
            _needs_reference(name)
            folder = tmp_path_factory.mktemp(f"{name}-{dtype}")
            folders[name, dtype] = hf_models.write_checkpoint(name, folder / "ckpt", dtype)
        return folders[name, dtype]

    return get


def _import(folder: Path, output: Path, *extra: str) -> Path:
    assert main(["import-hf", str(folder), "-o", str(output), *extra]) == 0
    return output


def _write_changed(tmp_path: Path, folder: Path, change) -> Path:
    """A copy of the checkpoint ``folder`` whose config.json and tensors
    ``change(config, tensors)`` has edited."""
    changed = tmp_path / "changed"
    shutil.copytree(folder, changed)
    config = json.loads((changed / "config.json").read_text())
    from safetensors.numpy import load_file, save_file

    tensors = load_file(str(changed / "model.safetensors"))
    change(config, tensors)
    (changed / "config.json").write_text(json.dumps(config))
    save_file(tensors, str(changed / "model.safetensors"), metadata={"format": "pt"})
    return changed


def _set(**fields):
    return lambda config, tensors: config.update(copy.deepcopy(fields))


def _drop(tensor):
    return lambda config, tensors: tensors.pop(tensor)


def _without_biases(config, tensors):
    """PhiMoE's config without attention_bias and lm_head_bias (false by
    default), its linear layers' biases dropped (its norms' kept), and
    named by transformers' class as its save_pretrained writes it."""
    del config["attention_bias"], config["lm_head_bias"]
    config["architectures"] = ["PhimoeForCausalLM"]
    for name in [name for name in tensors if name.endswith("proj.bias") or name == "lm_head.bias"]:
        del tensors[name]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_logits_equal_the_reference(tmp_path, checkpoints, gptq_run, name, dtype):
    folder = checkpoints(name, dtype)
    module = _import(folder, tmp_path / "model.mlir")
    tokens = _tokens(name)
    theirs = hf_models.reference_logits(folder, tokens)
    ours = Model(module).logits(tokens)
    assert relative_error(ours, theirs) < TOLERANCE, relative_error(ours, theirs)
    assert json.loads((folder / "config.json").read_text())["torch_dtype"] == dtype


@pytest.mark.parametrize(
    "name, change",
    [
        # Llama 3 read as if unscaled: wrong at 2048 positions (the tokens
        # above), so the agreement there tests the scaling.
        ("llama-3.2-1b", lambda config: config.pop("rope_scaling")),
        ("llama-3.1-8b", lambda config: config.pop("rope_scaling")),
        # No window: the positions past it would be seen.
        ("mistral", lambda config: config.update(sliding_window=None)),
        ("gemma-2", lambda config: config.update(sliding_window=4096)),
        ("gemma-2", lambda config: config.update(attn_logit_softcapping=None)),
        ("gemma-2", lambda config: config.update(final_logit_softcapping=None)),
        ("gemma-2", lambda config: config.update(query_pre_attn_scalar=16)),
        ("qwen3", lambda config: config.update(rms_norm_eps=1e-2)),
        # Without longrope: no mscale, the default frequencies.
        ("phimoe", lambda config: config.pop("rope_scaling")),
    ],
)
def test_the_reference_comparison_sees_each_setting(tmp_path, checkpoints, gptq_run, name, change):
    """Importing a checkpoint with one setting changed in its config.json
    gives logits far from the reference's: each setting the tests compare
    at is one that the comparison can see."""
    folder = checkpoints(name)
    changed = _write_changed(tmp_path, folder, lambda config, tensors: change(config))
    tokens = _tokens(name)
    ours = Model(_import(changed, tmp_path / "model.mlir")).logits(tokens)
    assert relative_error(ours, hf_models.reference_logits(folder, tokens)) > 100 * TOLERANCE


#: Mixtures of experts.
MOE = [name for name, config in CONFIGS.items() if config["model_type"] in architectures.MOE_KINDS]


@pytest.mark.parametrize("name", MOE)
def test_mixtures_of_experts_at_512_positions(tmp_path, checkpoints, gptq_run, name):
    """One sequence of 512 tokens: each expert gets a hundred or more of
    them on average, which the dispatch gathers from all over the sequence."""
    folder = checkpoints(name)
    tokens = np.random.default_rng(5).integers(0, CONFIGS[name]["vocab_size"], size=(1, 512)).astype(np.int32)
    ours = Model(_import(folder, tmp_path / "model.mlir")).logits(tokens)
    assert relative_error(ours, hf_models.reference_logits(folder, tokens)) < TOLERANCE


@pytest.mark.parametrize(
    "name, change",
    [
        pytest.param("qwen1.5-moe", _set(norm_topk_prob=True), id="qwen1.5-moe-norm_topk_prob"),
        pytest.param("olmoe", _set(norm_topk_prob=True), id="olmoe-norm_topk_prob"),
        # Qwen3-30B-A3B renormalizes; Qwen3MoeConfig's default does not.
        pytest.param("qwen3-moe", lambda config, tensors: config.pop("norm_topk_prob"),
                     id="qwen3-moe-norm_topk_prob-default"),
        # Clamps q and k after their norms (values of a few units) and v.
        pytest.param("olmoe", _set(clip_qkv=0.5), id="olmoe-clip_qkv"),
        # A threshold that leaves other logits beside an expert's own in the
        # sparsemixer's softmax for over 90% of the tokens (0.01: 3 to 6%).
        pytest.param("phimoe", _set(router_jitter_noise=0.3), id="phimoe-router_jitter_noise"),
        # At 64 positions, original_max_position_embeddings: the long
        # factors, the short mscale; the top-level field moves the factors'
        # bound alone (to the short factors).
        pytest.param("phimoe", lambda config, tensors: config["rope_scaling"].update(short_mscale=1.0),
                     id="phimoe-short_mscale"),
        pytest.param("phimoe", _set(original_max_position_embeddings=65), id="phimoe-original_max_position_embeddings"),
        # PhimoeConfig's defaults: no biases on the attention and the classifier.
        pytest.param("phimoe", _without_biases, id="phimoe-bias-defaults"),
    ],
)
def test_mixture_settings_equal_the_reference(tmp_path, checkpoints, gptq_run, name, change):
    """A setting the published config does not exercise, changed in
    config.json: the logits follow the reference's with it, which are far
    from those without it."""
    folder = checkpoints(name)
    changed = _write_changed(tmp_path, folder, change)
    tokens = _tokens(name)
    theirs = hf_models.reference_logits(changed, tokens)
    assert relative_error(theirs, hf_models.reference_logits(folder, tokens)) > 100 * TOLERANCE
    ours = Model(_import(changed, tmp_path / "model.mlir")).logits(tokens)
    assert relative_error(ours, theirs) < TOLERANCE


def test_phimoe_long_mscale_past_the_original_context(tmp_path, checkpoints, gptq_run):
    """Past original_max_position_embeddings (64 here) the cos and sin are
    scaled by long_mscale, which Phi-3.5-MoE sets equal to short_mscale:
    changed, the logits at 128 positions follow the reference's."""
    folder = checkpoints("phimoe")
    changed = _write_changed(tmp_path, folder, lambda config, tensors: config["rope_scaling"].update(long_mscale=1.0))
    tokens = np.random.default_rng(6).integers(0, CONFIGS["phimoe"]["vocab_size"], size=(1, 128)).astype(np.int32)
    theirs = hf_models.reference_logits(changed, tokens)
    assert relative_error(theirs, hf_models.reference_logits(folder, tokens)) > 100 * TOLERANCE
    ours = Model(_import(changed, tmp_path / "model.mlir")).logits(tokens)
    assert relative_error(ours, theirs) < TOLERANCE


def test_phimoe_decode_steps_past_the_original_context_equal_the_reference(tmp_path, checkpoints, gptq_run):
    """@prefill and @decode through original_max_position_embeddings (64):
    each step picks the factors and mscale by its own length, as
    transformers' cached steps do (the cached keys keep their rotation),
    so each step's logits equal transformers' cached step's."""
    import torch
    from transformers import AutoModelForCausalLM

    folder = checkpoints("phimoe")
    model = Model(_import(folder, tmp_path / "model.mlir"))
    reference = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32, attn_implementation="eager")
    prompt = np.random.default_rng(7).integers(0, CONFIGS["phimoe"]["vocab_size"], size=(1, 62)).astype(np.int32)
    caches = model.new_caches(1, 67)
    ours = model.prefill(prompt, caches)
    with torch.no_grad():
        out = reference.eval()(torch.from_numpy(prompt).long(), use_cache=True)
        for position in range(62, 67):  # lengths 63 to 67
            theirs = out.logits[:, -1].numpy()
            assert relative_error(ours, theirs) < TOLERANCE, position
            token = theirs.argmax(-1).astype(np.int32)
            ours = model.decode(token, position, caches)
            out = reference(torch.from_numpy(token[:, None]).long(), past_key_values=out.past_key_values,
                            use_cache=True)
        assert relative_error(ours, out.logits[:, -1].numpy()) < TOLERANCE


@pytest.mark.parametrize(
    "scaling, positions",
    [
        ({"rope_type": "linear", "factor": 4.0}, 4096),
        ({"type": "linear", "factor": 2.0}, 4096),  # the older spelling
        # Dynamic scaling acts past max_position_embeddings, which it extends factor times.
        ({"rope_type": "dynamic", "factor": 4.0}, 1024),
    ],
)
def test_linear_and_dynamic_scaling(tmp_path, gptq_run, scaling, positions):
    pytest.importorskip("transformers", reason="transformers is not installed (scripts/test-deps.sh installs it)")
    config = hf_models.config("tinyllama")
    config.update(rope_scaling=scaling, max_position_embeddings=positions)
    folder = hf_models.write_checkpoint("tinyllama", tmp_path / "ckpt", config_json=config)
    model = Model(_import(folder, tmp_path / "model.mlir"))
    if scaling["rope_type" if "rope_type" in scaling else "type"] == "dynamic":
        assert model.seq_len == 4 * positions
    tokens = np.random.default_rng(1).integers(0, 256, size=(1, 2048)).astype(np.int32)
    assert relative_error(model.logits(tokens), hf_models.reference_logits(folder, tokens)) < TOLERANCE


def test_module_size_does_not_grow_with_positions(tmp_path, checkpoints):
    """The module computes the rotary angles of the positions it is given:
    131072 positions cost what 2048 do (a digit or two of the attribute)."""
    folder = checkpoints("llama-3.2-1b")
    short = _write_changed(tmp_path, folder, _set(max_position_embeddings=2048))
    # Embedded, so that the modules do not name their checkpoints' folders.
    long_size = _import(folder, tmp_path / "long.mlir", "--embed-weights").stat().st_size
    short_size = _import(short, tmp_path / "short.mlir", "--embed-weights").stat().st_size
    assert abs(long_size - short_size) <= 16, (long_size, short_size)


def test_our_qwen3_implementation_is_qwen2_where_they_overlap(tmp_path, checkpoints):
    """qwen3_reference.py with Qwen 2's biases and without head norms is
    transformers' Qwen2ForCausalLM."""
    import qwen3_reference
    import torch
    from safetensors.torch import load_file

    folder = checkpoints("qwen2.5")
    config = json.loads((folder / "config.json").read_text())
    weights = load_file(str(folder / "model.safetensors"))
    if "lm_head.weight" not in weights:
        weights["lm_head.weight"] = weights["model.embed_tokens.weight"]
    tokens = _tokens("qwen2.5")
    with torch.no_grad():
        ours = qwen3_reference.forward(config, weights, torch.from_numpy(tokens).long()).numpy()
    assert relative_error(ours, hf_models.reference_logits(folder, tokens)) < TOLERANCE


@pytest.mark.parametrize("norm_topk_prob", [False, True])
def test_our_qwen3_moe_implementation_is_qwen2_moe_where_they_overlap(checkpoints, norm_topk_prob):
    """qwen3_reference.py's mixture of experts with Qwen 2's attention is
    transformers' Qwen2MoeForCausalLM whose shared experts output zero, a
    dense layer among the sparse ones, with top-k weights renormalized or
    not (see qwen3_reference.py)."""
    import qwen3_reference
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    folder = checkpoints("qwen1.5-moe")
    config = dict(json.loads((folder / "config.json").read_text()), norm_topk_prob=norm_topk_prob)
    weights = load_file(str(folder / "model.safetensors"))
    model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32, attn_implementation="eager",
                                                 norm_topk_prob=norm_topk_prob)
    tokens = torch.from_numpy(_tokens("qwen1.5-moe")).long()
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith("shared_expert.down_proj.weight"):
                parameter.zero_()
        theirs = model.eval()(tokens, use_cache=False).logits.numpy()
        ours = qwen3_reference.forward(config, weights, tokens).numpy()
    assert relative_error(ours, theirs) < TOLERANCE


def _calibration(tmp_path: Path, vocab: int) -> Path:
    path = tmp_path / "calibration.npy"
    np.save(path, np.random.default_rng(3).integers(0, vocab, size=(4, 64)).astype(np.int32))
    return path


#: The quantized layers of one block, by our name (Phi-3's fused ones as
#: stored), in their true-sequential groups: each group is calibrated on
#: the outputs of the groups before it, quantized.
BLOCK_GROUPS = {
    "separate": [["attention.wq", "attention.wk", "attention.wv"], ["attention.wo"],
                 ["feed_forward.w1", "feed_forward.w3"], ["feed_forward.w2"]],
    "fused": [["attention.wqkv"], ["attention.wo"], ["feed_forward.w13"], ["feed_forward.w2"]],
}


def _sparse(name: str, block: int) -> bool:
    """Whether block ``block`` of ``name`` is a mixture of experts, by
    transformers' rule (Mixtral and OLMoE have neither field: all are)."""
    config = CONFIGS[name]
    return name in MOE and block not in config.get("mlp_only_layers", []) and (
        (block + 1) % config.get("decoder_sparse_step", 1) == 0)


def _block_groups(name: str, block: int) -> List[List[str]]:
    """The quantized layers of block ``block`` of ``name``, by our name, in
    their true-sequential groups: a mixture of experts' every expert's w1
    and w3, then every expert's w2 (its routers float); a shared expert's
    w1 and w3 read the block's input and come first, its w2 with the
    routed experts' w1 and w3 (each group is one layer deeper)."""
    config = CONFIGS[name]
    if _sparse(name, block):
        prefix = f"layers.{block}.feed_forward."
        experts = range(config.get("num_local_experts", config.get("num_experts")))
        attention = [[f"layers.{block}.attention.w{x}" for x in "qkv"], [f"layers.{block}.attention.wo"]]
        up = [f"{prefix}experts.{e}.w{w}" for e in experts for w in (1, 3)]
        down = [f"{prefix}experts.{e}.w2" for e in experts]
        if "shared_expert_intermediate_size" in config:
            return attention + [[f"{prefix}shared_expert.w1", f"{prefix}shared_expert.w3"],
                                up + [f"{prefix}shared_expert.w2"], down]
        return attention + [up, down]
    kind = "fused" if config["model_type"] == "phi3" else "separate"
    return [[f"layers.{block}.{layer}" for layer in group] for group in BLOCK_GROUPS[kind]]


def _quantize(tmp_path: Path, module: Path, options: str) -> Tuple[Path, List[Dict[str, Any]], List[List[str]]]:
    """``module`` quantized to 4 bits in groups of 32 (and ``options``) on
    random token windows: the output, the report's layers, and the layers'
    names stage by stage, sorted."""
    quantized = tmp_path / "q.mlir"
    report = tmp_path / "report.json"
    runner.run_opt(module, quantized, [
        f"--gptq-quantize-model=calibration={_calibration(tmp_path, 256)} bits=4 group-size=32 "
        f"report={report} {options}"
    ])
    layers = json.loads(report.read_text())["layers"]
    stages: Dict[int, List[str]] = {}
    for layer in layers:
        stages.setdefault(layer["stage"], []).append(layer["name"])
    return quantized, layers, [sorted(stages[stage]) for stage in sorted(stages)]


def test_mixture_of_experts_quantizes_each_expert_on_its_tokens(tmp_path, checkpoints, gptq_opt):
    """Mixtral through import-hf: its experts are linear layers, quantized
    in four stages per block (q, k, v; o; every expert's w1 and w3; every
    expert's w2), each on the tokens routed to it (their counts differ:
    the report's samples are batches, so the Hessians' traces tell), the
    router float; the quantized model's logits stay near the float ones."""
    folder = checkpoints("mixtral")
    module = _import(folder, tmp_path / "model.mlir")
    hessians = tmp_path / "h.npz"
    quantized, layers, stages = _quantize(tmp_path, module, f"dump-hessians={hessians}")
    experts = CONFIGS["mixtral"]["num_local_experts"]
    groups = _block_groups("mixtral", 0) + _block_groups("mixtral", 1)
    assert stages == [sorted(group) for group in groups]
    assert not any(layer["name"].endswith(".gate") for layer in layers)
    # Each expert's Hessian is over its own tokens: 2/n sum of x x^T over
    # them, so its trace is proportional to how many it was sent.
    traces = [float(np.trace(np.load(hessians)[f"layers.0.feed_forward.experts.{e}.w1"]))
              for e in range(experts)]
    assert len(set(np.round(traces, 3))) == experts and min(traces) > 0
    tokens = _tokens("mixtral")[:, :32]
    ours, theirs = Model(quantized).logits(tokens), Model(module).logits(tokens)
    assert 1e-4 < relative_error(ours, theirs) < 0.5


@pytest.mark.parametrize("name", list(CONFIGS))
def test_quantize_export_and_import(tmp_path, checkpoints, gptq_opt, gptq_run, name):
    """4 bits in groups of 32 with act-order through --gptq-quantize-model;
    export-gptq writes every layer under its Hugging Face name and every
    float tensor as the model has it; import-gptq gives back the codes,
    zeros and groups exactly and the scales rounded to float16."""
    folder = checkpoints(name)
    module = _import(folder, tmp_path / "model.mlir")
    quantized, _, stages = _quantize(tmp_path, module, "act-order=true")
    groups = [sorted(group) for i in range(2) for group in _block_groups(name, i)]
    assert stages == groups
    expected = [layer for group in groups for layer in group]
    assert main(["export-gptq", str(quantized), "--out", str(tmp_path / "gptq")]) == 0
    exported = json.loads((tmp_path / "gptq" / "config.json").read_text())
    assert exported["architectures"] == CONFIGS[name]["architectures"]
    assert exported["quantization_config"]["desc_act"] is True
    imported = tmp_path / "imported.mlir"
    assert main(["import-gptq", str(tmp_path / "gptq"), "-o", str(imported)]) == 0

    before = gptq.read_rewritten_model(quantized)
    after = gptq.read_rewritten_model(imported)
    assert sorted(before.layers) == sorted(after.layers) == sorted(expected)
    for layer_name, layer in before.layers.items():
        again = after.layers[layer_name]
        np.testing.assert_array_equal(layer.codes, again.codes, err_msg=layer_name)
        np.testing.assert_array_equal(layer.zeros, again.zeros, err_msg=layer_name)
        np.testing.assert_array_equal(layer.g_idx, again.g_idx, err_msg=layer_name)
        np.testing.assert_array_equal(layer.scales.astype(np.float16).astype(np.float32), again.scales,
                                      err_msg=layer_name)
    for weight_name, array in before.weights.items():
        np.testing.assert_array_equal(array, after.weights[weight_name], err_msg=weight_name)
    tokens = _tokens(name)[:, :256]
    ours, theirs = Model(imported).logits(tokens), Model(quantized).logits(tokens)
    # Only the scales' rounding to float16 (2**-11 of each) separates them.
    assert 0 < relative_error(ours, theirs) < 1e-2


@pytest.mark.parametrize(
    "name, change, fragment",
    [
        ("qwen2.5", _set(use_sliding_window=True), "unsupported use_sliding_window = true"),
        ("qwen2.5", _drop("model.layers.1.self_attn.k_proj.bias"), "missing tensor model.layers.1.self_attn.k_proj.bias"),
        ("phi-3-mini", _set(rope_scaling={"type": "longrope", "short_factor": [1.0], "long_factor": [1.0]}),
         "unsupported rope_scaling with rope_type 'longrope': Phi3ForCausalLM takes no rotary scaling"),
        ("llama-3.2-1b", _set(rope_scaling={"rope_type": "llama3", "factor": 32.0}),
         "field rope_scaling.low_freq_factor is null"),
        ("llama-3.2-1b", _set(rope_scaling={"rope_type": "yarn", "factor": 4.0}),
         "unsupported rope_scaling.rope_type = 'yarn'"),
        ("gemma-2", _set(head_dim=16),
         "tensor model.layers.0.self_attn.q_proj.weight has shape [128, 64], expected [64, 64]"),
        ("gemma-2", _set(hidden_activation="gelu"), 'unsupported hidden_activation = "gelu"'),
        ("gemma-2", _set(final_logit_softcapping=-1.0), "field final_logit_softcapping is -1.0"),
        ("mistral", _set(sliding_window=0), "field sliding_window is 0, expected a positive integer"),
        ("qwen3", _set(attention_bias=True), "unsupported attention_bias = true"),
        ("qwen3", _set(architectures=["Qwen3MoeForCausalLM"]), 'model_type is "qwen3", expected "qwen3_moe"'),
        ("phi-3-mini", _set(intermediate_size=96),
         "tensor model.layers.0.mlp.down_proj.weight has shape [64, 128], expected [64, 96]"),
        ("mixtral", _set(num_experts_per_tok=9), "field num_experts_per_tok is 9"),
        ("mixtral", _set(num_local_experts=4), "unexpected tensor model.layers.0.block_sparse_moe.experts.4.w1.weight"),
        ("mixtral", _drop("model.layers.1.block_sparse_moe.experts.7.w2.weight"),
         "missing tensor model.layers.1.block_sparse_moe.experts.7.w2.weight"),
        ("qwen1.5-moe", _set(use_sliding_window=True), "unsupported use_sliding_window = true"),
        ("qwen1.5-moe", _set(norm_topk_prob="yes"), 'field norm_topk_prob is "yes", expected true or false'),
        ("qwen1.5-moe", _set(mlp_only_layers=0), "field mlp_only_layers is 0, expected a list of layer indices"),
        ("qwen1.5-moe", _set(decoder_sparse_step=0), "field decoder_sparse_step is 0, expected a positive integer"),
        # Layer 0 made sparse: its dense tensors are not the model's.
        ("qwen1.5-moe", _set(decoder_sparse_step=1), "unexpected tensor model.layers.0.mlp.down_proj.weight"),
        ("qwen1.5-moe", _set(moe_intermediate_size=64),
         "tensor model.layers.1.mlp.experts.0.gate_proj.weight has shape [32, 64], expected [64, 64]"),
        ("qwen1.5-moe", _drop("model.layers.1.mlp.shared_expert_gate.weight"),
         "missing tensor model.layers.1.mlp.shared_expert_gate.weight"),
        ("olmoe", _set(attention_bias=True), "unsupported attention_bias = true"),
        ("olmoe", _set(clip_qkv=-1.0), "field clip_qkv is -1.0"),
        ("olmoe", _set(num_experts_per_tok=9), "field num_experts_per_tok is 9"),
        ("qwen3-moe", _set(use_sliding_window=True), "unsupported use_sliding_window = true"),
        ("qwen3-moe", _set(num_experts=4), "unexpected tensor model.layers.0.mlp.experts.4.down_proj.weight"),
        # Qwen3MoeConfig's head_dim defaults to hidden_size / num_attention_heads.
        ("qwen3-moe", lambda config, tensors: config.pop("head_dim"),
         "tensor model.layers.0.self_attn.q_proj.weight has shape [128, 64], expected [64, 64]"),
        ("phimoe", _set(num_experts_per_tok=1),
         "unsupported num_experts_per_tok = 1: PhiMoEForCausalLM's sparsemixer routes each token to 2 experts"),
        ("phimoe", _set(router_jitter_noise=-0.1), "field router_jitter_noise is -0.1"),
        ("phimoe", _set(lm_head_bias=False), "unexpected tensor lm_head.bias"),
        ("phimoe", _drop("model.layers.1.self_attn.o_proj.bias"),
         "missing tensor model.layers.1.self_attn.o_proj.bias"),
        ("phimoe", _drop("model.norm.bias"), "missing tensor model.norm.bias"),
        ("phimoe", _set(rope_scaling={"type": "linear", "factor": 2.0}),
         "unsupported rope_scaling.rope_type = 'linear' (PhiMoEForCausalLM takes longrope)"),
        ("phimoe", lambda config, tensors: config["rope_scaling"].update(short_factor=[1.0] * 4),
         "field rope_scaling.short_factor is [1.0, 1.0, 1.0, 1.0], expected a list of head_dim / 2 = 8 numbers"),
        ("phimoe", lambda config, tensors: config["rope_scaling"].pop("original_max_position_embeddings"),
         "missing field rope_scaling.original_max_position_embeddings"),
    ],
)
def test_bad_configs(tmp_path, checkpoints, capsys, name, change, fragment):
    changed = _write_changed(tmp_path, checkpoints(name), change)
    output = tmp_path / "out" / "model.mlir"
    output.parent.mkdir()
    assert main(["import-hf", str(changed), "-o", str(output)]) == 1
    message = capsys.readouterr().err
    assert message.startswith("gptq_mlir: error: ") and message.count("\n") == 1, message
    assert fragment in message and str(changed) in message, message
    assert list(output.parent.iterdir()) == []


def test_a_tied_model_may_store_its_classifier(tmp_path, checkpoints):
    """A tied model that also stores lm_head.weight (equal to the
    embedding, as transformers saves some) imports to the same module."""
    folder = checkpoints("qwen2.5")
    changed = _write_changed(
        tmp_path, folder,
        lambda config, tensors: tensors.update({"lm_head.weight": tensors["model.embed_tokens.weight"].copy()}))
    a = _import(changed, tmp_path / "a.mlir", "--embed-weights")
    assert a.read_bytes() == _import(folder, tmp_path / "b.mlir", "--embed-weights").read_bytes()


def test_a_quantized_tied_classifier_leaves_no_widened_table(tmp_path, checkpoints, gptq_opt):
    """Quantizing a tied model's classifier (classifier=true) drops, in
    every entry, the widening of the whole embedding table that fed it: the
    table stays for the lookup alone, in its stored dtype (a widening left
    in @forward kept the runtime from telling that the table is only read a
    row at a time)."""
    name = "llama-3.2-1b"
    module = _import(checkpoints(name, "bfloat16"), tmp_path / "model.mlir")
    vocab, dim = CONFIGS[name]["vocab_size"], CONFIGS[name]["hidden_size"]
    widening = re.compile(rf"arith\.extf %\S+ : tensor<{vocab}x{dim}xbf16>")
    assert len(widening.findall(module.read_text())) == 3  # forward, prefill, decode
    quantized = tmp_path / "q.mlir"
    runner.run_opt(module, quantized, ["--gptq-quantize-model=method=rtn bits=4 group-size=32 classifier=true"])
    text = quantized.read_text()
    assert widening.findall(text) == []
    assert f"dense_resource<model.embed_tokens.weight> : tensor<{vocab}x{dim}xbf16>" in text
