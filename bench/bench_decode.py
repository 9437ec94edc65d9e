"""Generation at batch 1: prefill and decode speed of ours, PyTorch and
llama.cpp on the same weights, in one run. Not a test.

    .venv/bin/python bench/bench_decode.py --work /tmp/decode                     # the 110M and 1B shapes
    .venv/bin/python bench/bench_decode.py --work /tmp/decode --models 110m --engines ours,torch --json decode.json
    .venv/bin/python bench/bench_decode.py --work /tmp/decode --llama2c model.bin --hf some/folder
    .venv/bin/python bench/bench_decode.py --work /tmp/decode --engines ours --forms float32,w3g128-all,w2g128-all

Models: ``110m`` (llama2.c's stories110M shape, random weights from seed 0,
bench/make_checkpoint.py), ``1b`` (Llama-3.2-1B's config.json, random
bfloat16 weights, bench/make_hf_checkpoint.py), or any llama2.c checkpoint
(``--llama2c FILE``) or Hugging Face Llama folder (``--hf DIR``). A
llama2.c checkpoint is also written in the Hugging Face layout (for
PyTorch and llama.cpp) by python/tests/hf_convert.py.

Engines and forms:

- ``ours``: the importers' module (``import-llama2c`` or ``import-hf``,
  weights read in place) as ``float32`` (a bfloat16 checkpoint's weights
  widened inside the kernels), and rewritten by ``gptq-opt
  --gptq-quantize-model`` as ``w4g128`` (round to nearest, 4 bits, groups of
  128) and ``w4g128-act`` (GPTQ with act-order on 4 random windows of 128
  tokens: the g_idx of a real act-order checkpoint); the classifier stays
  float, as the pass leaves it by default; and ``w4g128-all``, w4g128 with
  the classifier quantized too (``classifier=true``: every matrix 4-bit, as
  in llama.cpp's Q4_0 file below); ``w8g128-all`` the same at 8 bits (to
  compare with Q8_0). ``--forms`` chooses ours (default: those five), any
  of ``float32`` and ``wBgG[-act][-all]`` (B bits, groups of G; ``-act``
  GPTQ with act-order as above, else round to nearest; ``-all`` the
  classifier too), e.g. ``--forms float32,w3g128-all,w2g128-all``. Calls through the C API
  (``gptq_mlir.model``: ``@prefill``, then ``@decode`` per token).
- ``torch``: transformers' ``LlamaForCausalLM`` in float32 with its KV
  cache (eager), at 1 and 2 threads; the better is reported.
- ``llama.cpp``: llama-cpp-python (``CMAKE_ARGS="-DGGML_NATIVE=on" pip
  install llama-cpp-python gguf`` builds llama.cpp from source) on GGUF
  files that this script writes from the same weights with the ``gguf``
  package: ``F32``, ``Q4_0`` (every matrix, the embedding included, as
  4-bit blocks of 32; norms float32) and ``Q8_0`` (8-bit blocks of 32). Llama 3's rope scaling factors are
  not written (they change the logits, not the speed).

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
from typing import Dict, List, Optional

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
    from gptq_mlir import native
    from gptq_mlir.model import Model

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
    from transformers import AutoModelForCausalLM

    from safetensors.torch import load_file
    from transformers import AutoConfig

    torch.set_num_threads(threads)
    # Built from the config and loaded by hand: transformers refuses
    # safetensors files without its "format" metadata (hf_convert's).
    config = AutoConfig.from_pretrained(folder)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager", torch_dtype=torch.float32)
    state = {}
    for file in sorted(Path(folder).glob("*.safetensors")):
        state.update({name: tensor.float() for name, tensor in load_file(str(file)).items()})
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or [name for name in missing if name != "lm_head.weight"]:
        raise RuntimeError(f"{folder}: missing {missing}, unexpected {unexpected}")
    model.tie_weights()
    model.float().eval()
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


def worker_llamacpp(gguf_path: str, prompt: np.ndarray, new: int, threads: int) -> Dict:
    from llama_cpp import Llama

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
        result = worker_llamacpp(spec["path"], prompt, spec["new"], spec["threads"])
    Path(spec["out"]).write_text(json.dumps(result))
    return 0


# GGUF ---------------------------------------------------------------------

def _hf_tensors(folder: Path) -> Dict[str, np.ndarray]:
    """Every tensor of a Hugging Face folder as float32."""
    from safetensors import safe_open

    files = sorted(folder.glob("*.safetensors"))
    tensors = {}
    for file in files:
        with safe_open(str(file), framework="pt") as handle:
            for name in handle.keys():
                tensors[name] = handle.get_tensor(name).float().numpy()
    return tensors


def write_gguf(folder: Path, out: Path, form: str) -> Path:
    """The checkpoint in ``folder`` as a llama GGUF file in ``form`` (F32,
    Q4_0 or Q8_0), with a placeholder vocabulary of the model's size."""
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

    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    parts = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
             "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}
    for name, tensor in _hf_tensors(folder).items():
        if name in names:
            target = names[name]
        else:
            pieces = name.split(".")  # model.layers.N.<part>.weight
            target = f"blk.{pieces[2]}.{parts['.'.join(pieces[3:-1])]}.weight"
        if name.endswith("q_proj.weight"):
            tensor = permute(tensor, heads)
        elif name.endswith("k_proj.weight"):
            tensor = permute(tensor, kv)
        tensor = np.ascontiguousarray(tensor, np.float32)
        if form != "F32" and tensor.ndim == 2:
            kind = gguf.GGMLQuantizationType[form]
            data = gguf.quants.quantize(tensor, kind)
            writer.add_tensor(target, data, raw_shape=data.shape, raw_dtype=kind)
        else:
            writer.add_tensor(target, tensor)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    tmp.rename(out)
    return out


# Models -------------------------------------------------------------------

def _drop_stale_modules(folder: Path) -> None:
    """Removes our modules in ``folder`` that an earlier version of the
    importers wrote with the KV caches' old layout (they would refuse to
    generate), so that they are imported and quantized again."""
    from gptq_mlir.model import Model

    module = folder / "model.mlir"
    if not module.exists() or Model(module).cache_shape is not None:
        return
    print(f"bench_decode: {module} has the KV caches' old layout: importing and quantizing again", flush=True)
    for pattern in ("*.mlir", "w*.safetensors", "model.weights.npz"):
        for path in folder.glob(pattern):
            path.unlink()


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
            from gptq_mlir import llama2c

            hf_convert.write_hf_checkpoint(llama2c.read_checkpoint(source), hf_folder)
        module = folder / "model.mlir"
        if not module.exists():
            bench_model.run_measured([sys.executable, "-m", "gptq_mlir", "import-llama2c", str(source), "-o",
                                      str(module), "--external-weights"], env=env, what="import")
    else:
        hf_folder = Path(model.split(":", 1)[1]) if ":" in model else folder / "hf"
        if not (hf_folder / "config.json").exists():
            bench_model.run_measured([sys.executable, str(ROOT / "bench/make_hf_checkpoint.py"), "llama-3.2-1b",
                                      str(hf_folder)], env=env, what="checkpoint")
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
        spec["path"] = str(write_gguf(files["hf"], work / model / f"model-{form}.gguf", form))
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
    parser.add_argument("--models", default="110m,1b", help="110m, 1b (comma-separated)")
    parser.add_argument("--llama2c", action="append", default=[], help="a llama2.c checkpoint to add")
    parser.add_argument("--hf", action="append", default=[], help="a Hugging Face Llama folder to add")
    parser.add_argument("--engines", default="ours,torch,llama.cpp")
    parser.add_argument("--forms", default=",".join(FORMS["ours"]),
                        help="our forms (comma-separated): float32 and wBgG[-act][-all], e.g. w3g128-all")
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new", type=int, default=128)
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
            for form in (args.forms if engine == "ours" else FORMS[engine]):
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
