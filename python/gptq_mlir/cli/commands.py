"""Command line: ``python -m gptq_mlir <command> ...`` (see docs/python.md)."""

import argparse
import contextlib
import functools
import itertools
import json
import math
import os
import signal
import sys
import time
from pathlib import Path
from typing import Callable, List, NoReturn, Optional, Tuple

import numpy as np

from . import sweep
from .. import signals
from ..data import corpus
from ..data.tokenizer import TextTokenizer, open_tokenizer, tokenizer_files
from ..errors import GPTQError, Terminated
from ..files.outputs import Run
from ..importers import emitter, llama2c
from ..runtime.archives import parameter_archives
from ..runtime.model import Model, Sampler, generate, perplexity


#: The name every error message starts with: ``gptq_mlir: error: ...``.
TOOL = "gptq_mlir"
PROG = "python -m gptq_mlir"


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and exit status 1, as
    every other error of the package (argparse prints the usage and exits 2)."""

    def error(self, message: str) -> NoReturn:
        command = self.prog[len(PROG) :].strip()
        where = f"{command}: " if command else ""
        _say(f"{TOOL}: error: {where}{_one_line(message)} (see --help)")
        sys.exit(1)


def _integer(least: int) -> Callable[[str], int]:
    """An argparse type: an integer of at least ``least``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"expected an integer >= {least}, got {value}")
        return value

    return parse


def _number(description: str, valid: Callable[[float], bool]) -> Callable[[str], float]:
    """An argparse type: a number that ``valid`` accepts, ``description``
    saying which in its errors."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {description}, got {text!r}") from None
        if not valid(value):
            raise argparse.ArgumentTypeError(f"expected {description}, got {text}")
        return value

    return parse


_fraction = _number("a number in [0, 1]", lambda value: 0.0 <= value <= 1.0)
_temperature = _number("a finite number >= 0", lambda value: value >= 0.0 and math.isfinite(value))
_top_p = _number("a number in (0, 1]", lambda value: 0.0 < value <= 1.0)


def _model_input(run: Run, path: str, what: str = "model") -> None:
    """The model ``path`` and the parameter archive it names are inputs of ``run``."""
    run.input(path, what)
    for archive in parameter_archives(path):
        run.input(archive, f"parameter archive of {path},")


def _checkpoint_inputs(run: Run, folder: str) -> None:
    """Every file of the Hugging Face or GPTQ checkpoint in ``folder`` that
    a reader may open is an input of ``run``: config.json,
    quantize_config.json, the shard index, the files it names and every
    ``*.safetensors`` and ``*.safetensors.index.json``."""
    from ..files import inputs
    from ..importers import hf

    base = Path(folder)
    names = {hf.CONFIG_FILE, hf.SINGLE_FILE, hf.INDEX_FILE, "quantize_config.json"}
    with contextlib.suppress(OSError):
        for pattern in ("*.safetensors", "*.safetensors.index.json"):
            names.update(path.name for path in base.glob(pattern))
    index = base / hf.INDEX_FILE
    # An index the reader refuses (through the same bounded, regular-file
    # reader) names no input; the reader says why, after the check.
    with contextlib.suppress(GPTQError, AttributeError):
        weight_map = inputs.load_json(index, "index").get("weight_map") if index.exists() else {}
        names.update(name for name in weight_map.values() if isinstance(name, str) and Path(name).name == name)
    for name in sorted(names):
        run.input(base / name, "checkpoint file")


def _numpy_errors_raise(command: Callable[[argparse.Namespace], None]) -> Callable[[argparse.Namespace], None]:
    """``command`` with NumPy's floating-point warnings (overflow, invalid
    values, division by zero, in a computation or a cast) raised as
    FloatingPointError: the importers and the export check what may
    overflow themselves (a scale beyond float16 is an error naming it), so
    any other is a bug reported in one line, not a warning printed beside
    the command's output."""

    @functools.wraps(command)
    def checked(args: argparse.Namespace) -> None:
        with np.errstate(over="raise", invalid="raise", divide="raise", under="ignore"):
            command(args)

    return checked


@_numpy_errors_raise
def _import_llama2c(args: argparse.Namespace) -> None:
    with Run() as run:
        run.input(args.checkpoint, "checkpoint")
        emitter.declare_module(run, args.output, args.external_weights)
        run.begin()
        checkpoint = llama2c.read_checkpoint(args.checkpoint)
        emitter.write_module(checkpoint, args.output, args.external_weights, run)
    cfg = checkpoint.config
    classifier = "shared classifier" if cfg.shared_classifier else "separate classifier"
    print(
        "import-llama2c: "
        + _imported(args, cfg, f"format version {checkpoint.version}", classifier),
        file=sys.stderr,
    )


def _imported(args: argparse.Namespace, cfg, source: str, classifier: str, archive=None) -> str:
    """The line an import prints: what it wrote and the model's shape (and
    the checkpoint file it reads its weights from, ``archive``)."""
    weights = ""
    if args.external_weights:
        weights = f" and {Path(args.output).parent / emitter.weights_file_name(args.output)}"
    elif archive is not None:
        weights = f", reading its weights from {archive}"
    return (
        f"wrote {args.output}{weights} ({source}, "
        f"dim {cfg.dim}, {cfg.n_layers} layers, {cfg.n_heads}/{cfg.n_kv_heads} heads, "
        f"vocab {cfg.vocab_size}, seq_len {cfg.seq_len}, {classifier})"
    )


def _import_folder(args: argparse.Namespace, read: Callable, by_reference: bool = False):
    """Imports the checkpoint folder ``args.folder`` that ``read`` reads
    into the module ``args.output``: every file of the folder is an input.
    With ``by_reference``, the module reads the checkpoint's tensors in
    place (``read`` then reads only the headers)."""
    with Run() as run:
        _checkpoint_inputs(run, args.folder)
        emitter.declare_module(run, args.output, args.external_weights)
        run.begin()
        if by_reference:
            checkpoint = read(args.folder, read_weights=False)
            emitter.write_module(checkpoint, args.output, run=run, references=checkpoint.references,
                                  archive=checkpoint.archive)
        else:
            checkpoint = read(args.folder)
            emitter.write_module(checkpoint, args.output, args.external_weights, run)
    return checkpoint


@_numpy_errors_raise
def _import_hf(args: argparse.Namespace) -> None:
    from ..importers import hf

    if args.embed_weights and args.external_weights:
        raise GPTQError("import-hf: --embed-weights and --external-weights both given; choose one")
    by_reference = not (args.embed_weights or args.external_weights)
    checkpoint = _import_folder(args, hf.read_checkpoint, by_reference)
    cfg = checkpoint.config
    dtypes = ", ".join(sorted(set(checkpoint.dtypes.values())))
    lm_head = "tied lm_head" if cfg.shared_classifier else "separate lm_head"
    source = f"{checkpoint.hf_config['architectures'][0]}, {dtypes}"
    archive = checkpoint.archive if by_reference else None
    print("import-hf: " + _imported(args, cfg, source, lm_head, archive), file=sys.stderr)


@_numpy_errors_raise
def _export_gptq(args: argparse.Namespace) -> None:
    from ..checkpoints import gptq

    quantization = gptq.export_gptq(args.model, args.out, args.format)
    print(
        f"export-gptq: wrote {Path(args.out) / 'model.safetensors'}, config.json and "
        f"quantize_config.json ({quantization['checkpoint_format']}, {quantization['bits']} bits, "
        f"group_size {quantization['group_size']}, desc_act {str(quantization['desc_act']).lower()}, "
        f"sym {str(quantization['sym']).lower()})",
        file=sys.stderr,
    )


@_numpy_errors_raise
def _import_gptq(args: argparse.Namespace) -> None:
    from ..checkpoints import gptq

    if args.embed_weights and args.external_weights:
        raise GPTQError("import-gptq: --embed-weights and --external-weights both given; choose one")
    if args.embed_weights or args.external_weights:
        checkpoint = _import_folder(args, gptq.read_gptq_checkpoint)
        written = f"{args.output}"
        if args.external_weights:
            written += f" and {Path(args.output).parent / emitter.weights_file_name(args.output)}"
    else:
        # The float weights are the checkpoint's tensors, read in place; the
        # quantized layers, converted to the rewrite's layout one at a time,
        # go to a safetensors file beside the module.
        archive = gptq.quantized_archive_path(args.output)
        with Run() as run:
            _checkpoint_inputs(run, args.folder)
            emitter.declare_module(run, args.output)
            run.output(archive, f"output {archive} (the quantized layers of {args.output})")
            run.begin()
            checkpoint = gptq.read_gptq_checkpoint(args.folder, read_weights=False)
            gptq.write_quantized_archive(checkpoint, run.path(archive))
            emitter.write_module(checkpoint, args.output, run=run, references=checkpoint.references,
                                  archive=[checkpoint.archive, archive])
        written = f"{args.output} and {archive}, reading its float weights from {checkpoint.archive}"
    print(
        f"import-gptq: wrote {written} ({len(checkpoint.quantized)} quantized layers, "
        f"{checkpoint.quantization.bits} bits, {checkpoint.quantization.checkpoint_format})",
        file=sys.stderr,
    )


@_numpy_errors_raise
def _import_torch(args: argparse.Namespace) -> None:
    from ..importers import torch_import

    with Run() as run:
        run.input(args.checkpoint, "checkpoint")
        run.output(args.output)
        run.begin()
        torch_import.import_llama2c_via_torch(args.checkpoint, run.path(args.output))
    print(f"import-torch: wrote {args.output}", file=sys.stderr)


def _model_and_tokenizer(args: argparse.Namespace) -> Tuple[Model, TextTokenizer]:
    """The --model and --tokenizer of a command, checked against each other:
    a llama2.c tokenizer must have as many tokens as the model's vocabulary,
    a Hugging Face one at most as many."""
    tokenizer = open_tokenizer(args.tokenizer)
    model = Model(args.model)
    if model.vocab_size is not None:
        tokenizer.check_vocabulary(model.vocab_size, args.model)
    return model, tokenizer


def _tokenizer_inputs(run: Run, path: str) -> None:
    """The files of the tokenizer ``path`` are inputs of ``run``."""
    for name in tokenizer_files(path):
        run.input(name, "tokenizer")


def _generate(args: argparse.Namespace) -> None:
    model, tokenizer = _model_and_tokenizer(args)
    prompt = tokenizer.encode(args.prompt, bos=tokenizer.add_bos) if args.prompt else []
    if not prompt:
        if tokenizer.bos_id is None:
            raise GPTQError(f"tokenizer {tokenizer.path} has no BOS token to start from: give --prompt")
        prompt = [tokenizer.bos_id]
    # Before the prompt is written: a prompt past the context is an error.
    model.check_prompt(len(prompt))

    # The text streams as tokens come: what decoding the sequence so far
    # adds to what was written, held back while it ends in a partial
    # character (a byte-level token).
    tokens = list(prompt)
    written = ""

    def write(final: bool = False) -> None:
        nonlocal written
        text = tokenizer.decode(tokens)
        if final and not text.startswith(written):
            # A decoder that rewrote earlier text (rare): what follows the
            # part both agree on.
            common = len(os.path.commonprefix([text, written]))
            written = text[:common] + written[common:]
            text = written + text[common:]
        if text.startswith(written) and (final or not text.endswith("\ufffd")):
            sys.stdout.write(text[len(written):])
            sys.stdout.flush()
            written = text

    write()
    counter = itertools.count(1)
    started = time.monotonic()

    def progress(previous: int, token: int) -> None:
        del previous
        tokens.append(token)
        write()
        if args.verbose:
            count = next(counter)
            rate = count / max(time.monotonic() - started, 1e-9)
            print(f"generate: {count}/{args.steps} tokens, {rate:.1f} tokens/s", file=sys.stderr, flush=True)

    sampler = Sampler(args.temperature, args.top_p, args.seed)
    sequence = generate(model, args.steps, prompt, progress, stop=tokenizer.stop_ids, sampler=sampler)
    write(final=True)
    sys.stdout.write("\n")
    made = len(sequence) - len(prompt)
    if len(sequence) == model.seq_len and made < args.steps:
        print(
            f"generate: stopped after {made} of {args.steps} tokens: the model's context is {model.seq_len} "
            "tokens (seq_len)",
            file=sys.stderr,
        )


def _calib(args: argparse.Namespace) -> None:
    size = args.samples * args.seqlen * np.dtype(np.int32).itemsize
    if size > sys.maxsize:
        raise GPTQError(
            f"--samples {args.samples} x --seqlen {args.seqlen} int32 tokens is {size} bytes, "
            f"more than an array can hold ({sys.maxsize} bytes)"
        )
    with Run() as run:
        _tokenizer_inputs(run, args.tokenizer)
        run.input(args.text, "text")
        run.output(args.output)
        run.begin()
        tokenizer = open_tokenizer(args.tokenizer)
        stream = corpus.load_corpus(tokenizer, args.text, args.start_fraction, args.end_fraction, sys.stderr)
        windows = corpus.calibration_windows(stream, args.samples, args.seqlen, args.seed)
        with run.open(args.output) as handle:
            np.save(handle, windows, allow_pickle=False)
    print(
        f"calib: wrote {args.output}: {windows.shape[0]} x {windows.shape[1]} int32 "
        f"from {len(stream)} tokens (seed {args.seed})",
        file=sys.stderr,
    )


def _perplexity(args: argparse.Namespace) -> None:
    model, tokenizer = _model_and_tokenizer(args)
    model.check_context(args.seqlen, "a window (--seqlen)")
    stream = corpus.load_corpus(tokenizer, args.text, args.start_fraction, args.end_fraction, sys.stderr)
    windows = corpus.consecutive_windows(stream, args.seqlen)
    model.check_tokens(windows[:1])
    print(
        f"perplexity: {len(stream)} tokens, {len(windows)} windows of {args.seqlen}",
        file=sys.stderr,
    )
    result = perplexity(model, windows, args.batch)
    print(json.dumps(result))


def _configurations(text: str) -> List[sweep.Configuration]:
    """An argparse type: a comma-separated list of sweep configurations."""
    try:
        return sweep.parse_configurations(text)
    except GPTQError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _pass_options(text: str) -> List[str]:
    """An argparse type: more options of --gptq-quantize-model."""
    try:
        return sweep.parse_pass_options(text)
    except GPTQError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _sweep(args: argparse.Namespace) -> None:
    with Run() as run:
        _model_input(run, args.model)
        external = bool(parameter_archives(args.model))
        _tokenizer_inputs(run, args.tokenizer)
        run.input(args.text, "text")
        run.input(args.calibration, "calibration")
        sweep.declare(run, args.configs, args.out_dir, args.calibration, args.pass_options, external)
        run.begin()
        model, tokenizer = _model_and_tokenizer(args)
        model.check_context(args.seqlen, "a window (--seqlen)")
        stream = corpus.load_corpus(tokenizer, args.text, args.start_fraction, args.end_fraction, sys.stderr)
        windows = corpus.consecutive_windows(stream, args.seqlen)
        model.check_tokens(windows[:1])
        description = {
            "model": args.model, "tokenizer": args.tokenizer, "text": args.text,
            "start_fraction": args.start_fraction, "end_fraction": args.end_fraction,
            "calibration": args.calibration, "pass_options": " ".join(args.pass_options),
        }
        result = sweep.sweep(model, windows, args.configs, run, args.out_dir, args.calibration,
                             args.batch, args.pass_options, description)
    names = sweep.output_names(args.configs, external)
    print(f"sweep: wrote {', '.join(str(Path(args.out_dir) / name) for name in names)}", file=sys.stderr)
    sys.stdout.write(sweep.markdown_table(result["configurations"]))


#: --tokenizer's help.
_TOKENIZER_HELP = (
    "llama2.c tokenizer .bin, or a Hugging Face tokenizer: a folder with tokenizer.json or the tokenizer.json "
    "itself, BOS/EOS from tokenizer_config.json, generation_config.json and config.json beside it "
    "(needs the tokenizers package)"
)
#: --text's help.
_TEXT_HELP = (
    "plain text (each paragraph, separated by blank lines, a document), JSON lines (.jsonl or .json: "
    'one object per line, its "text" field a document) or parquet (.parquet or PAR1 magic: each row of '
    'its "text" column a document; needs pyarrow)'
)


def _add_fraction_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--start-fraction", type=_fraction, default=0.0,
        help="use documents from this fraction of the text on (default 0)",
    )
    parser.add_argument(
        "--end-fraction", type=_fraction, default=1.0,
        help="use documents up to this fraction of the text (default 1)",
    )


def _add_external_weights(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--external-weights",
        action="store_true",
        help="write the weights to an uncompressed .npz beside the module (OUTPUT minus .mlir, "
        "plus .weights.npz), which the module names, rather than as hexadecimal text in it; "
        "for large models",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m gptq_mlir``."""
    parser = _Parser(
        prog=PROG,
        description="Import models to MLIR, prepare data and evaluate models through gptq-run.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub = commands.add_parser("import-llama2c", help="llama2.c checkpoint -> linalg-on-tensors MLIR")
    sub.add_argument("checkpoint", help="llama2.c .bin checkpoint (legacy or version 1)")
    sub.add_argument("-o", "--output", required=True, help="MLIR file to write")
    _add_external_weights(sub)
    sub.set_defaults(handler=_import_llama2c)

    sub = commands.add_parser(
        "import-hf",
        help="Hugging Face checkpoint (Llama, Mistral, Qwen2, Qwen3, Phi-3, Gemma-2) -> linalg-on-tensors MLIR",
    )
    sub.add_argument("folder", help="folder with config.json and model.safetensors (or a sharded index)")
    sub.add_argument("-o", "--output", required=True, help="MLIR file to write")
    sub.description = (
        "Write a module whose weights are the checkpoint's own tensors, read in place in their stored dtype "
        "(float32, float16 or bfloat16) whenever the module runs: the module names model.safetensors or the "
        "shards' index as its parameter archive (gptq.parameters), so the import copies nothing and takes "
        "seconds whatever the model's size; keep the checkpoint where it is, or move both together. "
        "--embed-weights or --external-weights write float32 copies instead."
    )
    sub.add_argument(
        "--embed-weights", action="store_true",
        help="write the weights into the module as float32 hexadecimal text (a self-contained file; for "
        "small models)",
    )
    _add_external_weights(sub)
    sub.set_defaults(handler=_import_hf)

    sub = commands.add_parser(
        "export-gptq", help="model rewritten by --gptq-quantize-model -> GPTQ checkpoint (safetensors)",
        description="Write a model that gptq-opt --gptq-quantize-model rewrote as a GPTQ checkpoint: "
        "model.safetensors, config.json with quantization_config, and quantize_config.json "
        "(docs/gptq-checkpoints.md). A tied model's classifier is stored as lm_head.weight as well, a copy "
        "of the embeddings, for loaders that do not tie it (AutoGPTQ).",
    )
    sub.add_argument("model", help="MLIR module (text or bytecode) written by gptq-opt --gptq-quantize-model")
    sub.add_argument("--out", required=True, help="folder for model.safetensors, config.json, quantize_config.json")
    sub.add_argument(
        "--format", choices=["gptq", "gptq_v2"], default="gptq",
        help="checkpoint_format: gptq (the default, v1: qzeros hold zero - 1, so no zero point of 0; what "
        "AutoGPTQ 0.7.1 and transformers read) or gptq_v2 (qzeros hold the zero; GPTQModel reads it)",
    )
    sub.set_defaults(handler=_export_gptq)

    sub = commands.add_parser("import-gptq", help="GPTQ checkpoint (safetensors) -> quantized MLIR model")
    sub.add_argument(
        "folder",
        help="folder with config.json, quantize_config.json (either holding the quantization config) and "
        "model.safetensors, shards with an index, or the *.safetensors file model_file_base_name names",
    )
    sub.add_argument("-o", "--output", required=True, help="MLIR file to write")
    sub.description = (
        "Write a module of the GPTQ checkpoint's model: its float tensors (embeddings, norms, layers left "
        "float) are read in place from the checkpoint whenever the module runs, as import-hf's are; its "
        "quantized layers are converted to gptq-opt's layout (packed codes, float32 scales and zero points, "
        "g_idx), one layer at a time, into OUTPUT minus .mlir plus .safetensors beside the module. The module "
        "names both as its parameter archives (gptq.parameters): keep them where they are, or move them "
        "together. --embed-weights or --external-weights write float32 copies of everything instead."
    )
    sub.add_argument(
        "--embed-weights", action="store_true",
        help="write every tensor into the module as hexadecimal text (a self-contained file; for small models)",
    )
    _add_external_weights(sub)
    sub.set_defaults(handler=_import_gptq)

    sub = commands.add_parser(
        "import-torch", help="llama2.c checkpoint -> PyTorch module -> torch-mlir linalg-on-tensors MLIR"
    )
    sub.add_argument("checkpoint", help="llama2.c .bin checkpoint (legacy or version 1)")
    sub.add_argument("-o", "--output", required=True, help="MLIR file to write")
    sub.set_defaults(handler=_import_torch)

    sub = commands.add_parser(
        "generate",
        help="generate text, streamed as it is made (a KV cache with @prefill and @decode when the model has them)",
    )
    sub.add_argument("--model", required=True, help="MLIR module with @forward (and @prefill and @decode)")
    sub.add_argument("--tokenizer", required=True, help=_TOKENIZER_HELP)
    sub.add_argument(
        "--steps", type=_integer(1), default=64,
        help="number of tokens to generate (fewer when the model predicts BOS or an EOS token)",
    )
    sub.add_argument(
        "--prompt", default="", help="text to start from, after BOS where the tokenizer adds it (default: BOS only)"
    )
    sub.add_argument(
        "--temperature", type=_temperature, default=0.0,
        help="sampling temperature; 0 (the default) picks the most likely token",
    )
    sub.add_argument(
        "--top-p", type=_top_p, default=1.0,
        help="sample among the most likely tokens whose probabilities sum to this (default 1: all)",
    )
    sub.add_argument("--seed", type=_integer(0), default=0, help="random seed of the sampling (default 0)")
    sub.add_argument(
        "--verbose", action="store_true", help="a line per token on stderr, with the tokens per second so far"
    )
    sub.set_defaults(handler=_generate)

    sub = commands.add_parser("calib", help="random token windows for calibration, as .npy")
    sub.add_argument("--tokenizer", required=True, help=_TOKENIZER_HELP)
    sub.add_argument("--text", required=True, help=_TEXT_HELP)
    sub.add_argument("--samples", type=_integer(1), required=True, help="number of windows")
    sub.add_argument("--seqlen", type=_integer(1), required=True, help="tokens per window")
    sub.add_argument("--seed", type=_integer(0), default=0, help="random seed, >= 0 (default 0)")
    sub.add_argument("-o", "--output", required=True, help=".npy file to write (int32 [samples, seqlen])")
    _add_fraction_options(sub)
    sub.set_defaults(handler=_calib)

    sub = commands.add_parser("perplexity", help="perplexity over consecutive windows of a text")
    sub.add_argument("--model", required=True, help="MLIR module with @forward")
    sub.add_argument("--tokenizer", required=True, help=_TOKENIZER_HELP)
    sub.add_argument("--text", required=True, help=_TEXT_HELP)
    sub.add_argument("--seqlen", type=_integer(2), required=True, help="tokens per window")
    sub.add_argument("--batch", type=_integer(1), default=32, help="windows per gptq-run call (default 32)")
    _add_fraction_options(sub)
    sub.set_defaults(handler=_perplexity)

    sub = commands.add_parser(
        "sweep", help="quantize with gptq-opt in several configurations and compare perplexity"
    )
    sub.add_argument("--model", required=True, help="MLIR module with @forward (float32)")
    sub.add_argument("--tokenizer", required=True, help=_TOKENIZER_HELP)
    sub.add_argument("--text", required=True, help="text to measure perplexity on: " + _TEXT_HELP)
    sub.add_argument("--calibration", help="calibration windows .npy (as calib writes them), for gptq")
    sub.add_argument("--out-dir", required=True, help="folder for the models, reports, table and plot")
    sub.add_argument(
        "--configs", type=_configurations, default=sweep.DEFAULT_CONFIGURATIONS,
        help="comma-separated configurations, float32 or METHOD-wBITS[-gGROUP][-act] "
        f"(default {sweep.DEFAULT_CONFIGURATIONS})",
    )
    sub.add_argument(
        "--pass-options", type=_pass_options, default="",
        help="more --gptq-quantize-model options for every configuration, e.g. 'sym=true sequential=blocks'",
    )
    sub.add_argument("--seqlen", type=_integer(2), required=True, help="tokens per window")
    sub.add_argument("--batch", type=_integer(1), default=32, help="windows per gptq-run call (default 32)")
    _add_fraction_options(sub)
    sub.set_defaults(handler=_sweep)
    return parser


def _one_line(text: str) -> str:
    """``text`` with its line breaks escaped, so that a message stays one line."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


def _message(error: BaseException) -> str:
    """The one-line message for a failure a command does not report itself:
    the package's own errors as they are, what the system refuses (a file,
    memory) in its words, and anything else as an internal error with its
    type, which is a bug of the package."""
    if isinstance(error, GPTQError):
        text = str(error)
    elif isinstance(error, MemoryError):
        text = f"out of memory: {error}" if str(error) else "out of memory"
    elif isinstance(error, OSError):
        where = f"{error.filename}: " if error.filename is not None else ""
        text = f"{where}{error.strerror or error}"
    else:
        detail = str(error)
        text = f"internal error: {type(error).__name__}" + (f": {detail}" if detail else "")
    return _one_line(text)


def _say(line: str) -> None:
    """Print ``line`` on stderr whatever became of ``sys.stderr`` (closed,
    replaced by None, or unable to allocate): then straight to descriptor
    2, and silently nowhere if that is closed too."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
        return
    except Exception:  # noqa: BLE001 - any failure of the stream: try the descriptor
        pass
    with contextlib.suppress(OSError):
        os.write(2, (line + "\n").encode("utf-8", "replace"))


def main(argv: Optional[List[str]] = None) -> int:
    """Run one command; return the process exit status.

    Every failure prints one line, ``gptq_mlir: error: ...``, on stderr:
    exit status 1 for the package's own errors (GPTQError), bad arguments,
    what the system refuses (an unreadable or unwritable file, exhausted
    memory) and any other exception (an internal error, named with its
    type); 130 for Ctrl-C, 128 + the signal's number for SIGTERM (143) and
    SIGHUP, whatever exception the signal's became on its way (an extension
    module may turn it into another) and even when the command finished
    meanwhile. Whatever the failure, the command's temporaries are removed
    and no output is left half written.
    """
    status, failure = 0, None
    try:
        with signals.raising():
            if signals.received() is not None:
                # Received before the command began (python -m gptq_mlir
                # records them from its start).
                raise signals.exception(signals.received())
            args = build_parser().parse_args(argv)
            args.handler(args)
    except SystemExit as exit_:
        # argparse exits 0 after --help; _Parser.error exits 1.
        status = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
    except BaseException as error:  # noqa: BLE001 - every failure is one line
        failure = error
    # The signals no longer raise: the line below is printed whole.
    signum = signals.received()
    if signum is None and isinstance(failure, KeyboardInterrupt):
        signum = signal.SIGINT
    elif signum is None and isinstance(failure, Terminated):
        signum = failure.signum
    if signum is not None:
        _say(f"{TOOL}: error: {signals.message(signum)}")
        return signals.status(signum)
    if failure is None:
        return status
    try:
        message = _message(failure)
    except MemoryError:
        message = "out of memory"
    _say(f"{TOOL}: error: {message}")
    return 1
