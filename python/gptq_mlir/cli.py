"""Command line: ``python -m gptq_mlir <command> ...`` (see docs/python.md)."""

import argparse
import itertools
import json
import sys
from pathlib import Path
from typing import Callable, List, NoReturn, Optional, Tuple

from . import data, importer, llama2c, sweep
from .errors import GPTQError
from .fileio import save_npy
from .model import Model, generate, perplexity
from .tokenizer import Tokenizer, load_tokenizer


#: The name every error message starts with: ``gptq_mlir: error: ...``.
TOOL = "gptq_mlir"
PROG = "python -m gptq_mlir"


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and exit status 1, as
    every other error of the package (argparse prints the usage and exits 2)."""

    def error(self, message: str) -> NoReturn:
        command = self.prog[len(PROG) :].strip()
        where = f"{command}: " if command else ""
        print(f"{TOOL}: error: {where}{message} (see --help)", file=sys.stderr)
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


def _fraction(text: str) -> float:
    """An argparse type: a number in [0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text}")
    return value


def _import_llama2c(args: argparse.Namespace) -> None:
    checkpoint = llama2c.read_checkpoint(args.checkpoint)
    importer.write_module(checkpoint, args.output, external_weights=args.external_weights)
    cfg = checkpoint.config
    classifier = "shared classifier" if cfg.shared_classifier else "separate classifier"
    print(
        "import-llama2c: "
        + _imported(args, cfg, f"format version {checkpoint.version}", classifier),
        file=sys.stderr,
    )


def _imported(args: argparse.Namespace, cfg, source: str, classifier: str) -> str:
    """The line an import prints: what it wrote and the model's shape."""
    weights = ""
    if args.external_weights:
        weights = f" and {Path(args.output).parent / importer.weights_file_name(args.output)}"
    return (
        f"wrote {args.output}{weights} ({source}, "
        f"dim {cfg.dim}, {cfg.n_layers} layers, {cfg.n_heads}/{cfg.n_kv_heads} heads, "
        f"vocab {cfg.vocab_size}, seq_len {cfg.seq_len}, {classifier})"
    )


def _import_hf(args: argparse.Namespace) -> None:
    from . import hf

    checkpoint = hf.read_checkpoint(args.folder)
    importer.write_module(checkpoint, args.output, external_weights=args.external_weights)
    cfg = checkpoint.config
    dtypes = ", ".join(sorted(set(checkpoint.dtypes.values())))
    lm_head = "tied lm_head" if cfg.shared_classifier else "separate lm_head"
    print("import-hf: " + _imported(args, cfg, dtypes, lm_head), file=sys.stderr)


def _export_gptq(args: argparse.Namespace) -> None:
    from . import gptq_checkpoint

    quantization = gptq_checkpoint.export_gptq(args.model, args.out)
    print(
        f"export-gptq: wrote {Path(args.out) / 'model.safetensors'}, config.json and "
        f"quantize_config.json ({quantization['bits']} bits, group_size {quantization['group_size']}, "
        f"desc_act {str(quantization['desc_act']).lower()}, sym {str(quantization['sym']).lower()})",
        file=sys.stderr,
    )


def _import_gptq(args: argparse.Namespace) -> None:
    from . import gptq_checkpoint

    checkpoint = gptq_checkpoint.read_gptq_checkpoint(args.folder)
    importer.write_module(checkpoint, args.output, external_weights=args.external_weights)
    print(
        f"import-gptq: wrote {args.output} ({len(checkpoint.quantized)} quantized layers, "
        f"{checkpoint.hf_config['quantization_config']['bits']} bits)",
        file=sys.stderr,
    )


def _import_torch(args: argparse.Namespace) -> None:
    from . import torch_import

    torch_import.import_llama2c_via_torch(args.checkpoint, args.output)
    print(f"import-torch: wrote {args.output}", file=sys.stderr)


def _model_and_tokenizer(args: argparse.Namespace) -> Tuple[Model, Tokenizer]:
    """The --model and --tokenizer of a command, checked against each other."""
    tokenizer = load_tokenizer(args.tokenizer)
    model = Model(args.model)
    if model.vocab_size is not None and model.vocab_size != tokenizer.vocab_size:
        raise GPTQError(
            f"tokenizer {args.tokenizer} has {tokenizer.vocab_size} tokens but model "
            f"{args.model} has a vocabulary of {model.vocab_size}"
        )
    return model, tokenizer


def _generate(args: argparse.Namespace) -> None:
    model, tokenizer = _model_and_tokenizer(args)
    prompt = tokenizer.encode(args.prompt) if args.prompt else None

    counter = itertools.count(1)

    def progress(previous: int, token: int) -> None:
        del previous, token
        print(f"generate: {next(counter)}/{args.steps} tokens", file=sys.stderr, flush=True)

    tokens = generate(model, args.steps, prompt, progress)
    sys.stdout.write(tokenizer.decode(tokens) + "\n")


def _calib(args: argparse.Namespace) -> None:
    tokenizer = load_tokenizer(args.tokenizer)
    stream = data.load_corpus(tokenizer, args.text, args.start_fraction, args.end_fraction)
    windows = data.calibration_windows(stream, args.samples, args.seqlen, args.seed)
    save_npy(args.output, windows)
    print(
        f"calib: wrote {args.output}: {windows.shape[0]} x {windows.shape[1]} int32 "
        f"from {len(stream)} tokens (seed {args.seed})",
        file=sys.stderr,
    )


def _perplexity(args: argparse.Namespace) -> None:
    model, tokenizer = _model_and_tokenizer(args)
    stream = data.load_corpus(tokenizer, args.text, args.start_fraction, args.end_fraction)
    windows = data.consecutive_windows(stream, args.seqlen)
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
    model, tokenizer = _model_and_tokenizer(args)
    stream = data.load_corpus(tokenizer, args.text, args.start_fraction, args.end_fraction)
    windows = data.consecutive_windows(stream, args.seqlen)
    model.check_tokens(windows[:1])
    inputs = [args.model, args.tokenizer, args.text]
    if args.calibration is not None:
        inputs.append(args.calibration)
    description = {
        "model": args.model, "tokenizer": args.tokenizer, "text": args.text,
        "start_fraction": args.start_fraction, "end_fraction": args.end_fraction,
        "calibration": args.calibration, "pass_options": " ".join(args.pass_options),
    }
    result = sweep.sweep(model, windows, args.configs, args.out_dir, args.calibration,
                         args.batch, args.pass_options, inputs, description)
    sys.stdout.write(sweep.markdown_table(result["configurations"]))


def _add_fraction_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--start-fraction", type=_fraction, default=0.0,
        help="use paragraphs from this fraction of the text on (default 0)",
    )
    parser.add_argument(
        "--end-fraction", type=_fraction, default=1.0,
        help="use paragraphs up to this fraction of the text (default 1)",
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

    sub = commands.add_parser("import-hf", help="Hugging Face Llama checkpoint -> linalg-on-tensors MLIR")
    sub.add_argument("folder", help="folder with config.json and model.safetensors (or a sharded index)")
    sub.add_argument("-o", "--output", required=True, help="MLIR file to write")
    _add_external_weights(sub)
    sub.set_defaults(handler=_import_hf)

    sub = commands.add_parser(
        "export-gptq", help="model rewritten by --gptq-quantize-model -> GPTQ checkpoint (safetensors)"
    )
    sub.add_argument("model", help="MLIR module (text or bytecode) written by gptq-opt --gptq-quantize-model")
    sub.add_argument("--out", required=True, help="folder for model.safetensors, config.json, quantize_config.json")
    sub.set_defaults(handler=_export_gptq)

    sub = commands.add_parser("import-gptq", help="GPTQ checkpoint (safetensors) -> quantized MLIR model")
    sub.add_argument("folder", help="folder with config.json (with quantization_config) and model.safetensors")
    sub.add_argument("-o", "--output", required=True, help="MLIR file to write")
    _add_external_weights(sub)
    sub.set_defaults(handler=_import_gptq)

    sub = commands.add_parser(
        "import-torch", help="llama2.c checkpoint -> PyTorch module -> torch-mlir linalg-on-tensors MLIR"
    )
    sub.add_argument("checkpoint", help="llama2.c .bin checkpoint (legacy or version 1)")
    sub.add_argument("-o", "--output", required=True, help="MLIR file to write")
    sub.set_defaults(handler=_import_torch)

    sub = commands.add_parser("generate", help="greedy decoding through gptq-run")
    sub.add_argument("--model", required=True, help="MLIR module with @forward")
    sub.add_argument("--tokenizer", required=True, help="llama2.c tokenizer .bin")
    sub.add_argument("--steps", type=_integer(1), default=64, help="number of tokens to generate")
    sub.add_argument("--prompt", default="", help="text to start from (default: BOS only)")
    sub.set_defaults(handler=_generate)

    sub = commands.add_parser("calib", help="random token windows for calibration, as .npy")
    sub.add_argument("--tokenizer", required=True, help="llama2.c tokenizer .bin")
    sub.add_argument("--text", required=True, help="text file, paragraphs separated by blank lines")
    sub.add_argument("--samples", type=_integer(1), required=True, help="number of windows")
    sub.add_argument("--seqlen", type=_integer(1), required=True, help="tokens per window")
    sub.add_argument("--seed", type=_integer(0), default=0, help="random seed, >= 0 (default 0)")
    sub.add_argument("-o", "--output", required=True, help=".npy file to write (int32 [samples, seqlen])")
    _add_fraction_options(sub)
    sub.set_defaults(handler=_calib)

    sub = commands.add_parser("perplexity", help="perplexity over consecutive windows of a text")
    sub.add_argument("--model", required=True, help="MLIR module with @forward")
    sub.add_argument("--tokenizer", required=True, help="llama2.c tokenizer .bin")
    sub.add_argument("--text", required=True, help="text file, paragraphs separated by blank lines")
    sub.add_argument("--seqlen", type=_integer(2), required=True, help="tokens per window")
    sub.add_argument("--batch", type=_integer(1), default=32, help="windows per gptq-run call (default 32)")
    _add_fraction_options(sub)
    sub.set_defaults(handler=_perplexity)

    sub = commands.add_parser(
        "sweep", help="quantize with gptq-opt in several configurations and compare perplexity"
    )
    sub.add_argument("--model", required=True, help="MLIR module with @forward (float32)")
    sub.add_argument("--tokenizer", required=True, help="llama2.c tokenizer .bin")
    sub.add_argument("--text", required=True, help="text file to measure perplexity on")
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


def _message(error: BaseException) -> str:
    """The one-line message for a failure a command does not report itself."""
    if isinstance(error, MemoryError):
        return f"out of memory: {error}" if str(error) else "out of memory"
    if isinstance(error, OSError):
        where = f"{error.filename}: " if error.filename is not None else ""
        return f"{where}{error.strerror or error}"
    return str(error)


def main(argv: Optional[List[str]] = None) -> int:
    """Run one command; return the process exit status.

    Every failure prints one line, ``gptq_mlir: error: ...``, on stderr and
    returns 1: the package's own errors (GPTQError), bad arguments, and
    what the system refuses (an unreadable or unwritable file, exhausted
    memory).
    """
    try:
        args = build_parser().parse_args(argv)
        args.handler(args)
    except (GPTQError, OSError, MemoryError) as error:
        print(f"{TOOL}: error: {_message(error)}", file=sys.stderr)
        return 1
    except SystemExit as exit_:
        # argparse exits 0 after --help; _Parser.error exits 1.
        return exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
    return 0
