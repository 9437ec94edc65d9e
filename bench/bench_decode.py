"""Generation at batch 1: prefill and decode speed of ours, PyTorch and
llama.cpp on the same weights, in one run. Not a test.

    .venv/bin/python bench/bench_decode.py --work /tmp/decode                     # the 110M and 1B shapes
    .venv/bin/python bench/bench_decode.py --work /tmp/decode --models 110m --engines ours,torch --json decode.json
    .venv/bin/python bench/bench_decode.py --work /tmp/decode --llama2c model.bin --hf some/folder
    .venv/bin/python bench/bench_decode.py --work /tmp/decode --engines ours --forms float32,w3g128-all,w2g128-all
    .venv/bin/python bench/bench_decode.py --work /tmp/decode --models mixtral-2 --forms float32,w4g128,w4g128-all
    .venv/bin/python bench/bench_decode.py --work /tmp/decode --models mixtral-2,mixtral-2-top8 --engines ours

Models: ``110m`` (llama2.c's stories110M shape, random weights from seed 0,
bench/make_checkpoint.py), ``1b`` (Llama-3.2-1B's config.json, random
bfloat16 weights, bench/make_hf_checkpoint.py), ``mixtral-2``
(Mixtral-8x7B's config.json cut to 2 layers, random bfloat16 weights, 6.3
GB, make_hf_checkpoint.py's ``mixtral-8x7b --layers 2``: 8 experts, each
token routed to 2), ``mixtral-2-top8`` (the same weights, linked, with
``num_experts_per_tok`` 8: every token to every expert, so that a decode
step reads all experts' weights where ``mixtral-2``'s reads 2 of 8), or any
llama2.c checkpoint (``--llama2c FILE``) or Hugging Face Llama or Mixtral
folder (``--hf DIR``). A llama2.c checkpoint is also written in the
Hugging Face layout (for PyTorch and llama.cpp) by
python/tests/hf_convert.py.

Engines and forms:

- ``ours``: the importers' module (``import-llama2c`` or ``import-hf``,
  weights read in place) as ``float32`` (a bfloat16 checkpoint's weights
  widened inside the kernels), and rewritten by ``gptq-opt
  --gptq-quantize-model`` as ``w4g128`` (round to nearest, 4 bits, groups of
  128) and ``w4g128-act`` (GPTQ with act-order on 4 random windows of 128
  tokens: the g_idx of a real act-order checkpoint); the classifier stays
  float, as the pass leaves it by default; and ``w4g128-all``, w4g128 with
  the classifier quantized too (``classifier=true``: every matrix 4-bit, as
  in llama.cpp's Q4_0 file below; a mixture's routers stay float, as the
  pass leaves them without ``routers=true`` and llama.cpp keeps its
  ``ffn_gate_inp``); ``w8g128-all`` the same at 8 bits (to
  compare with Q8_0). ``--forms`` chooses ours (default: those five), any
  of ``float32`` and ``wBgG[-act][-all]`` (B bits, groups of G; ``-act``
  GPTQ with act-order as above, else round to nearest; ``-all`` the
  classifier too), e.g. ``--forms float32,w3g128-all,w2g128-all``. Calls through the C API
  (``gptq_mlir.runtime.model``: ``@prefill``, then ``@decode`` per token).
- ``torch``: transformers' ``LlamaForCausalLM`` (``MixtralForCausalLM``)
  in float32 with its KV cache (eager), at 1 and 2 threads; the better is
  reported. Its weights are filled in place a tensor at a time (peak: the
  float32 model, 12.7 GB for ``mixtral-2``).
- ``llama.cpp``: llama-cpp-python (``CMAKE_ARGS="-DGGML_NATIVE=on" pip
  install llama-cpp-python gguf`` builds llama.cpp from source) on GGUF
  files that this script writes from the same weights with the ``gguf``
  package, a tensor at a time: ``F32``, ``Q4_0`` (every matrix, the
  embedding included, as 4-bit blocks of 32; norms and routers float32) and
  ``Q8_0`` (8-bit blocks of 32); ``--gguf-forms`` chooses among them, each
  also as ``FORM-norepack``: the same file loaded as llama.cpp's
  ``--no-repack`` loads it (on an AVX-512 CPU llama.cpp repacks Q4_0 into
  interleaved rows, ``q4_0_8x8``, by default, and keeps both the mapped
  file and the repacked copy: twice the memory). Llama
  3's rope scaling factors are not written (they change the logits, not the
  speed). Mixtral is written as convert_hf_to_gguf.py writes it: arch
  ``llama`` with ``expert_count`` and ``expert_used_count``, the router as
  ``blk.N.ffn_gate_inp``, each layer's experts stacked into
  ``blk.N.ffn_gate_exps`` (``w1``), ``ffn_up_exps`` (``w3``) and
  ``ffn_down_exps`` (``w2``), ``[experts, rows, columns]``.

Each measurement is a process of its own (this script's ``--worker``
mode): the prompt (``--prompt`` random tokens, default 128) through one
prefill call, then ``--new`` tokens (default 128), each the arg-max of the
previous logits, one decode call each. Prefill tokens/s is the prompt's
length over the prefill's seconds; decode tokens/s the new tokens over the
decode loop's seconds. Compilation and loading are not timed; every
engine warms up with an 8-token prefill. Each worker starts from a cold
page cache (``--page-cache cold``, the default: the model folder's files
are flushed and dropped with ``posix_fadvise(DONTNEED)`` first), so that
every engine reads its weights from the disk into pages of its own
choosing and none inherits another's (the kernel maps a file 2 MiB at a
time only where its page cache holds 2 MiB folios). Peak RSS is the
worker's (wait4). ``--json FILE`` writes one record per model, engine
and form: ``{"model", "engine", "form", "prefill_tok_s", "decode_tok_s",
"peak_rss_mib"}``.
"""

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))

FORMS = {"ours": ["float32", "w4g128", "w4g128-act", "w4g128-all", "w8g128-all"], "torch": ["float32"],
         "llama.cpp": ["F32", "Q4_0", "Q8_0"]}


# Workers ------------------------------------------------------------------

def _prompt(vocab: int, length: int) -> np.ndarray:
    return np.random.default_rng(0).integers(3, vocab, size=length).astype(np.int32)


def worker_ours(module: str, prompt: np.ndarray, new: int) -> Dict:
    from gptq_mlir.runtime import native
    from gptq_mlir.runtime.model import Model

    model = Model(module)
    handle = native.open_module(module)
    handle.compile("prefill")
    handle.compile("decode")
    caches = model.new_caches(1, len(prompt) + new)
    model.prefill(prompt[None, :8], model.new_caches(1, 8))  # warm up, as the others do
    start = time.perf_counter()
    logits = model.prefill(prompt[None, :], caches)
    prefill = time.perf_counter() - start
    tokens = []
    start = time.perf_counter()
    for step in range(new):
        token = int(np.argmax(logits[0]))
        tokens.append(token)
        logits = model.decode(np.array([token], np.int32), len(prompt) + step, caches)
    decode = time.perf_counter() - start
    return {"prefill_seconds": prefill, "decode_seconds": decode, "tokens": tokens}


def worker_torch(folder: str, prompt: np.ndarray, new: int, threads: int) -> Dict:
    import torch
    from safetensors import safe_open
    from transformers import AutoConfig, AutoModelForCausalLM
    from transformers.modeling_utils import no_init_weights

    torch.set_num_threads(threads)
    # Built from the config without initializing its weights, then filled
    # in place one tensor at a time: transformers refuses safetensors files
    # without its "format" metadata (hf_convert's), and a float32 copy of
    # the whole checkpoint beside the model would double the memory (25 GB
    # for the 2-layer Mixtral).
    config = AutoConfig.from_pretrained(folder)
    with no_init_weights():
        model = AutoModelForCausalLM.from_config(config, attn_implementation="eager", torch_dtype=torch.float32)
    params = model.state_dict(keep_vars=True)  # tied weights under each of their names
    loaded = set()
    with torch.no_grad():
        for file in sorted(Path(folder).glob("*.safetensors")):
            with safe_open(str(file), framework="pt") as handle:
                for name in handle.keys():
                    if name not in params:
                        raise RuntimeError(f"{folder}: unexpected tensor {name}")
                    params[name].copy_(handle.get_tensor(name))
                    loaded.add(name)
    missing = [name for name, _ in model.named_parameters() if name not in loaded and name != "lm_head.weight"]
    if missing:
        raise RuntimeError(f"{folder}: missing {missing}")
    model.tie_weights()
    model.eval()
    ids = torch.from_numpy(prompt.astype(np.int64))[None, :]
    with torch.no_grad():
        model(ids[:, :8], use_cache=True)  # warm up
        start = time.perf_counter()
        out = model(ids, use_cache=True)
        prefill = time.perf_counter() - start
        past, logits = out.past_key_values, out.logits[:, -1]
        tokens = []
        start = time.perf_counter()
        for _ in range(new):
            token = int(torch.argmax(logits[0]))
            tokens.append(token)
            out = model(torch.tensor([[token]]), past_key_values=past, use_cache=True)
            past, logits = out.past_key_values, out.logits[:, -1]
        decode = time.perf_counter() - start
    return {"prefill_seconds": prefill, "decode_seconds": decode, "tokens": tokens}


def worker_llamacpp(gguf_path: str, prompt: np.ndarray, new: int, threads: int, repack: bool) -> Dict:
    import llama_cpp.llama
    from llama_cpp import Llama

    if not repack:
        # llama.cpp's --no-repack: llama-cpp-python has no argument for
        # it, so its default model parameters are changed in this process.
        defaults = llama_cpp.llama.llama_cpp.llama_model_default_params

        def no_repack():
            params = defaults()
            params.use_extra_bufts = False
            return params

        llama_cpp.llama.llama_cpp.llama_model_default_params = no_repack
    llm = Llama(model_path=gguf_path, n_ctx=len(prompt) + new + 8, n_batch=len(prompt), n_threads=threads,
                n_threads_batch=threads, logits_all=False, verbose=False)
    llm.eval([int(t) for t in prompt[:8]])  # warm up
    llm.reset()
    start = time.perf_counter()
    llm.eval([int(t) for t in prompt])
    prefill = time.perf_counter() - start
    vocab = llm.n_vocab()

    def last_logits() -> np.ndarray:
        # The last position's logits as llama.cpp holds them (without
        # logits_all, llama-cpp-python keeps no copy).
        return np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(vocab,))

    tokens = []
    start = time.perf_counter()
    for _ in range(new):
        token = int(np.argmax(last_logits()))
        tokens.append(token)
        llm.eval([token])
    decode = time.perf_counter() - start
    return {"prefill_seconds": prefill, "decode_seconds": decode, "tokens": tokens}


def worker_main(args) -> int:
    spec = json.loads(args.worker)
    prompt = _prompt(spec["vocab"], spec["prompt"])
    if spec["engine"] == "ours":
        result = worker_ours(spec["path"], prompt, spec["new"])
    elif spec["engine"] == "torch":
        result = worker_torch(spec["path"], prompt, spec["new"], spec["threads"])
    else:
        result = worker_llamacpp(spec["path"], prompt, spec["new"], spec["threads"], spec["repack"])
    Path(spec["out"]).write_text(json.dumps(result))
    return 0


# GGUF ---------------------------------------------------------------------

def _gguf_plan(folder: Path, config: Dict, files) -> Tuple[List, Dict]:
    """What a llama GGUF file of the Hugging Face checkpoint in ``folder``
    holds, in order: ``(name, shape, router, names)``, the GGUF tensor
    ``name`` of float32 ``shape`` made of the checkpoint's tensors
    ``names`` (one, or a mixture's experts' stacked on a new first axis, as
    convert_hf_to_gguf.py merges Mixtral's: ``ffn_gate_exps`` from each
    expert's ``w1``, ``ffn_up_exps`` from ``w3``, ``ffn_down_exps`` from
    ``w2``); ``router`` marks the mixture's router (``ffn_gate_inp``), which
    llama.cpp keeps in float32. Also each tensor's safetensors file, opened
    within the ExitStack ``files``."""
    from safetensors import safe_open

    names = {"model.embed_tokens.weight": "token_embd", "model.norm.weight": "output_norm",
             "lm_head.weight": "output"}
    parts = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
             "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
             "block_sparse_moe.gate": "ffn_gate_inp"}
    experts = {"w1": "ffn_gate_exps", "w3": "ffn_up_exps", "w2": "ffn_down_exps"}
    plan, stacks, handles = [], {}, {}
    for file in sorted(folder.glob("*.safetensors")):
        handle = files.enter_context(safe_open(str(file), framework="pt"))
        for name in handle.keys():
            handles[name] = handle
            shape = list(handle.get_slice(name).get_shape())
            pieces = name.split(".")  # model.layers.N.<part>.weight
            if name in names:
                plan.append((f"{names[name]}.weight", shape, False, [name]))
            elif pieces[3:5] == ["block_sparse_moe", "experts"]:
                target = f"blk.{pieces[2]}.{experts[pieces[6]]}.weight"
                if target not in stacks:
                    stacks[target] = [None] * config["num_local_experts"]
                    plan.append((target, [config["num_local_experts"]] + shape, False, stacks[target]))
                stacks[target][int(pieces[5])] = name
            else:
                part = parts.get(".".join(pieces[3:-1]))
                if pieces[:2] != ["model", "layers"] or part is None:
                    raise SystemExit(f"bench_decode: no GGUF name for {name} (llama and Mixtral only)")
                plan.append((f"blk.{pieces[2]}.{part}.weight", shape, part == "ffn_gate_inp", [name]))
    return plan, handles


def write_gguf(folder: Path, out: Path, form: str) -> Path:
    """The checkpoint in ``folder`` (Llama or Mixtral) as a llama GGUF file
    in ``form`` (F32, Q4_0 or Q8_0), with a placeholder vocabulary of the
    model's size. Written a tensor at a time (the 2-layer Mixtral is 12.7
    GB in float32): the tensors' descriptions first, then their data."""
    import contextlib

    import gguf

    if out.exists():
        return out
    config = json.loads((folder / "config.json").read_text())
    dim, layers = config["hidden_size"], config["num_hidden_layers"]
    heads, kv = config["num_attention_heads"], config.get("num_key_value_heads", config["num_attention_heads"])
    head_dim = config.get("head_dim") or dim // heads
    vocab = config["vocab_size"]
    tmp = out.with_suffix(".tmp")
    writer = gguf.GGUFWriter(str(tmp), "llama")
    writer.add_context_length(config.get("max_position_embeddings", 2048))
    writer.add_embedding_length(dim)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv)
    writer.add_rope_dimension_count(head_dim)
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    writer.add_layer_norm_rms_eps(config.get("rms_norm_eps", 1e-5))
    writer.add_rope_freq_base(config.get("rope_theta", 10000.0))
    if "num_local_experts" in config:
        # llama.cpp reads Mixtral as "llama" with these two counts.
        writer.add_expert_count(config["num_local_experts"])
        writer.add_expert_used_count(config["num_experts_per_tok"])
    file_types = {"F32": gguf.LlamaFileType.ALL_F32, "Q4_0": gguf.LlamaFileType.MOSTLY_Q4_0,
                  "Q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}
    writer.add_file_type(file_types[form])
    writer.add_tokenizer_model("llama")
    tokens = [b"<unk>", b"<s>", b"</s>"] + [f"<0x{i:02X}>".encode() for i in range(256)]
    tokens += [f"t{i}".encode() for i in range(vocab - len(tokens))]
    writer.add_token_list(tokens[:vocab])
    writer.add_token_scores([0.0] * vocab)
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    types += [gguf.TokenType.BYTE] * 256 + [gguf.TokenType.NORMAL] * (vocab - 259)
    writer.add_token_types(types[:vocab])
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)

    def permute(w: np.ndarray, n_head: int) -> np.ndarray:
        # Hugging Face's q and k rows (rotated as halves) back to llama.cpp's
        # interleaved pairs, as convert_hf_to_gguf.py does.
        return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)

    with contextlib.ExitStack() as files:
        plan, handles = _gguf_plan(folder, config, files)
        kinds = []
        for name, shape, router, _ in plan:
            kind = gguf.GGMLQuantizationType[form] if form != "F32" and len(shape) >= 2 and not router else None
            nbytes = 4 * int(np.prod(shape)) if kind is None else \
                int(np.prod(gguf.quants.quant_shape_to_byte_shape(shape, kind)))
            writer.add_tensor_info(name, shape, np.dtype(np.float32), nbytes, raw_dtype=kind)
            kinds.append(kind)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_ti_data_to_file()
        for (name, shape, _, sources), kind in zip(plan, kinds):
            parts = []
            for source in sources:
                tensor = handles[source].get_tensor(source).float().numpy()
                if source.endswith("q_proj.weight"):
                    tensor = permute(tensor, heads)
                elif source.endswith("k_proj.weight"):
                    tensor = permute(tensor, kv)
                tensor = np.ascontiguousarray(tensor, np.float32)
                # Quantized a matrix at a time (an expert's: 0.23 GB in
                # float32), not as the whole stack.
                parts.append(tensor if kind is None else gguf.quants.quantize(tensor, kind))
            writer.write_tensor_data(parts[0] if len(parts) == 1 else np.stack(parts))
    writer.close()
    tmp.rename(out)
    return out


# Models -------------------------------------------------------------------

def _drop_stale_modules(folder: Path) -> None:
    """Removes our modules in ``folder`` that an earlier version of the
    importers wrote with the KV caches' old layout (they would refuse to
    generate), so that they are imported and quantized again."""
    from gptq_mlir.runtime.model import Model

    module = folder / "model.mlir"
    if not module.exists() or Model(module).cache_shape is not None:
        return
    print(f"bench_decode: {module} has the KV caches' old layout: importing and quantizing again", flush=True)
    for pattern in ("*.mlir", "w*.safetensors", "model.weights.npz"):
        for path in folder.glob(pattern):
            path.unlink()


#: The Hugging Face shapes by name: bench/make_hf_checkpoint.py's preset
#: and arguments, and the experts per token that config.json says (None:
#: the preset's). ``mixtral-2-top8`` is ``mixtral-2``'s weights (linked,
#: not copied) with every token sent to all 8 experts: a decode step then
#: reads every expert's weights, where ``mixtral-2``'s reads 2 of 8.
HF_MODELS = {"1b": ("llama-3.2-1b", [], None), "mixtral-2": ("mixtral-8x7b", ["--layers", "2"], None),
             "mixtral-2-top8": ("mixtral-8x7b", ["--layers", "2"], 8)}


def write_hf_model(work: Path, model: str, env: Dict) -> None:
    """The Hugging Face folder ``work/model/hf`` of one of HF_MODELS."""
    import bench_model

    if model not in HF_MODELS:
        raise SystemExit(f"bench_decode: unknown model '{model}' (110m, {', '.join(HF_MODELS)})")
    preset, options, per_token = HF_MODELS[model]
    hf_folder = work / model / "hf"
    if per_token is None:
        bench_model.run_measured([sys.executable, str(ROOT / "bench/make_hf_checkpoint.py"), preset,
                                  str(hf_folder)] + options, env=env, what="checkpoint")
        return
    base = next(name for name, spec in HF_MODELS.items() if spec[:2] == (preset, options) and spec[2] is None)
    base_folder = work / base / "hf"
    if not (base_folder / "config.json").exists():
        write_hf_model(work, base, env)
    hf_folder.mkdir(parents=True, exist_ok=True)
    for file in base_folder.iterdir():
        if file.name != "config.json" and not (hf_folder / file.name).exists():
            (hf_folder / file.name).symlink_to(file.resolve())
    config = json.loads((base_folder / "config.json").read_text())
    config["num_experts_per_tok"] = per_token
    (hf_folder / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True))


def prepare(work: Path, model: str, args) -> Dict:
    """The files of ``model``: the llama2.c checkpoint (if any), the Hugging
    Face folder, our modules."""
    import bench_model

    folder = work / model
    folder.mkdir(parents=True, exist_ok=True)
    _drop_stale_modules(folder)
    env = bench_model.tool_env(args)
    opt = bench_model.tool(args, "gptq-opt")
    files: Dict = {}
    if model == "110m" or model.startswith("llama2c:"):
        source = Path(model.split(":", 1)[1]) if ":" in model else folder / "model.bin"
        if not source.exists():
            import make_checkpoint

            make_checkpoint.write_checkpoint(source, make_checkpoint.config_for("110m"), seed=0)
        hf_folder = folder / "hf"
        if not (hf_folder / "config.json").exists():
            sys.path.insert(0, str(ROOT / "python" / "tests"))
            import hf_convert
            from gptq_mlir.importers import llama2c

            hf_convert.write_hf_checkpoint(llama2c.read_checkpoint(source), hf_folder)
        module = folder / "model.mlir"
        if not module.exists():
            bench_model.run_measured([sys.executable, "-m", "gptq_mlir", "import-llama2c", str(source), "-o",
                                      str(module), "--external-weights"], env=env, what="import")
    else:
        hf_folder = Path(model.split(":", 1)[1]) if ":" in model else folder / "hf"
        if not (hf_folder / "config.json").exists():
            write_hf_model(work, model, env)
        module = folder / "model.mlir"
        if not module.exists():
            bench_model.run_measured([sys.executable, "-m", "gptq_mlir", "import-hf", str(hf_folder), "-o",
                                      str(module)], env=env, what="import")
    config = json.loads((hf_folder / "config.json").read_text())
    files["vocab"] = config["vocab_size"]
    files["hf"] = hf_folder
    files[("ours", "float32")] = module
    for form in args.forms:
        if form == "float32":
            continue
        options = quantize_options(form)
        out = folder / f"{form}.mlir"
        if not out.exists():
            calib = folder / "calib.npy"
            np.save(calib, np.random.default_rng(1).integers(3, files["vocab"], size=(4, 128)).astype(np.int32))
            bench_model.run_measured([opt, str(module), f"--gptq-quantize-model={options.format(calib=calib)}",
                                      "-o", str(out)], env=env, what="quantize")
        files[("ours", form)] = out
    return files


def quantize_options(form: str) -> str:
    """``--gptq-quantize-model`` options of one of our quantized forms,
    ``wBgG`` with ``-act`` (GPTQ with act-order on the calibration windows,
    ``{calib}``) and/or ``-all`` (the classifier quantized too); without
    ``-act``, round to nearest."""
    match = re.fullmatch(r"w([2-8])g(\d+)(-act)?(-all)?", form)
    if not match:
        raise SystemExit(f"bench_decode: unknown form '{form}' (float32 or wBgG[-act][-all], e.g. w3g128-all)")
    bits, group, act, every = match.groups()
    if act:
        options = (f"calibration={{calib}} bits={bits} group-size={group} act-order=true "
                   "layer-errors=false calibration-batch=4")
    else:
        options = f"method=rtn bits={bits} group-size={group}"
    return options + (" classifier=true" if every else "")


def drop_page_cache(folder: Path) -> None:
    """Asks the kernel to drop the cached pages of every file under
    ``folder`` (links followed): each engine then reads its weights from
    disk as its own loader maps them (ours asks for 2 MiB pages, llama.cpp
    reads ahead), not in the pages an earlier writer or reader left in the
    cache, which differ by up to 15% in decode speed."""
    for root, _, names in os.walk(folder, followlinks=True):
        for name in names:
            path = os.path.join(root, name)
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                continue
            try:
                os.fsync(fd)  # dirty pages are not dropped
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            except OSError:
                pass
            finally:
                os.close(fd)


def measure(work: Path, model: str, engine: str, form: str, files: Dict, args) -> Dict:
    import bench_model

    out = work / model / f"result-{engine}-{form}.json"
    spec = {"engine": engine, "vocab": files["vocab"], "prompt": args.prompt, "new": args.new,
            "threads": args.threads, "out": str(out)}
    if engine == "ours":
        spec["path"] = str(files[("ours", form)])
    elif engine == "torch":
        spec["path"] = str(files["hf"])
    else:
        base = form.removesuffix("-norepack")
        spec["path"] = str(write_gguf(files["hf"], work / model / f"model-{base}.gguf", base))
        spec["repack"] = base == form
    if args.page_cache == "cold":
        drop_page_cache(work / model)
    env = bench_model.tool_env(args)
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        env.pop(var, None)
    run = bench_model.run_measured([sys.executable, __file__, "--worker", json.dumps(spec)], env=env,
                                   timeout=args.timeout, what=f"{engine} {form}")
    result = json.loads(out.read_text())
    return {"model": model, "engine": engine, "form": form,
            "prefill_tok_s": args.prompt / result["prefill_seconds"],
            "decode_tok_s": args.new / result["decode_seconds"],
            "peak_rss_mib": run["peak_rss_bytes"] / 2**20, "tokens": result["tokens"][:16],
            "threads": spec["threads"]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "bench-decode")
    parser.add_argument("--models", default="110m,1b",
                        help="110m, 1b, mixtral-2, mixtral-2-top8 (comma-separated)")
    parser.add_argument("--llama2c", action="append", default=[], help="a llama2.c checkpoint to add")
    parser.add_argument("--hf", action="append", default=[], help="a Hugging Face Llama or Mixtral folder to add")
    parser.add_argument("--engines", default="ours,torch,llama.cpp")
    parser.add_argument("--forms", default=",".join(FORMS["ours"]),
                        help="our forms (comma-separated): float32 and wBgG[-act][-all], e.g. w3g128-all")
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new", type=int, default=128)
    parser.add_argument("--gguf-forms", default=",".join(FORMS["llama.cpp"]),
                        help="llama.cpp's forms (comma-separated): F32, Q4_0, Q8_0, each optionally with "
                             "-norepack (llama.cpp's --no-repack), e.g. Q4_0,Q4_0-norepack")
    parser.add_argument("--threads", type=int, default=2, help="threads of llama.cpp (ours use the machine's)")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--build-dir", default=str(ROOT / "build"))
    parser.add_argument("--compile-cache", choices=["on", "off"], default="on")
    parser.add_argument("--page-cache", choices=["cold", "warm"], default="cold",
                        help="cold (default): the model folder's files are dropped from the page cache before "
                             "each engine's run, so that each engine maps its weights as its loader asks; warm: "
                             "left as earlier runs and writers left them")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker_main(args)
    import bench_model

    args.work.mkdir(parents=True, exist_ok=True)
    bench_model.SCRATCH["dir"] = str(args.work)
    models = [m for m in args.models.split(",") if m] + [f"llama2c:{p}" for p in args.llama2c] + \
        [f"hf:{p}" for p in args.hf]
    engines = [e for e in args.engines.split(",") if e]
    args.forms = [f for f in args.forms.split(",") if f]
    for form in args.forms:
        if form != "float32":
            quantize_options(form)
    args.gguf_forms = [f for f in args.gguf_forms.split(",") if f]
    for form in args.gguf_forms:
        if form.removesuffix("-norepack") not in FORMS["llama.cpp"]:
            raise SystemExit(f"bench_decode: unknown GGUF form '{form}' ({', '.join(FORMS['llama.cpp'])}, "
                             "each optionally with -norepack)")
    for model in models:
        if model != "110m" and ":" not in model and model not in HF_MODELS:
            raise SystemExit(f"bench_decode: unknown model '{model}' (110m, {', '.join(HF_MODELS)})")
    records: List[Dict] = []
    for model in models:
        files = prepare(args.work, model, args)
        for engine in engines:
            if engine == "llama.cpp":
                try:
                    import gguf  # noqa: F401
                    import llama_cpp  # noqa: F401
                except ImportError:
                    print("bench_decode: llama.cpp skipped: llama-cpp-python or gguf is not installed "
                          "(CMAKE_ARGS=\"-DGGML_NATIVE=on\" pip install llama-cpp-python gguf)", file=sys.stderr)
                    continue
            forms = {"ours": args.forms, "llama.cpp": args.gguf_forms}.get(engine, FORMS[engine])
            for form in forms:
                settings = [1, 2] if engine == "torch" else [args.threads]
                best = None
                for threads in settings:
                    args_threads, args.threads = args.threads, threads
                    try:
                        record = measure(args.work, model, engine, form, files, args)
                    finally:
                        args.threads = args_threads
                    print(f"bench_decode: {model} {engine} {form} ({threads} thread(s)): prefill "
                          f"{record['prefill_tok_s']:.1f} tok/s, decode {record['decode_tok_s']:.1f} tok/s, "
                          f"peak {record['peak_rss_mib']:.0f} MiB", file=sys.stderr, flush=True)
                    if best is None or record["decode_tok_s"] > best["decode_tok_s"]:
                        best = record
                records.append(best)
    print("| model | engine | form | prefill tok/s | decode tok/s | peak RSS |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in records:
        print(f"| {r['model']} | {r['engine']} | {r['form']} | {r['prefill_tok_s']:.1f} | "
              f"{r['decode_tok_s']:.1f} | {r['peak_rss_mib']:.0f} MiB |")
    if args.json:
        args.json.write_text(json.dumps([{k: r[k] for k in ("model", "engine", "form", "prefill_tok_s",
                                                              "decode_tok_s", "peak_rss_mib")}
                                         for r in records], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
