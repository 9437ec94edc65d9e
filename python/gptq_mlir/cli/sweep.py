"""Quantize a model in several configurations and compare their perplexity
(``python -m gptq_mlir sweep``).

Each configuration is one run of ``gptq-opt --gptq-quantize-model`` (see
:func:`gptq_mlir.runtime.runner.run_opt`); each model, the float32 one included, is
then measured with :func:`gptq_mlir.runtime.model.perplexity` on the same windows.
The outputs, in the output folder, are written together at the end (a
failed sweep leaves none of them):

- ``<config>.mlir`` and ``<config>.report.json``: the quantized model and
  gptq-opt's report, for every configuration but float32;
- ``perplexity.json``: the results, ``perplexity.md``: the same table as
  printed, ``perplexity.png``: perplexity against bits.

A configuration is named ``float32`` or ``METHOD-wBITS[-gGROUP][-act]``:
``rtn-w4`` (round to nearest, 4 bits, one grid per output row),
``gptq-w3-g32-act`` (GPTQ, 3 bits, groups of 32 input columns, act-order).
"""

import json
import math
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, TextIO

import numpy as np

from ..errors import GPTQError
from ..files.outputs import PathLike, Run
from ..runtime import runner
from ..runtime.model import Model, perplexity

FLOAT = "float32"
METHODS = ("rtn", "gptq")

#: The default sweep: round to nearest and GPTQ at 4 and 3 bits, per row and
#: with groups of 32 (GPTQ with act-order), against float32.
DEFAULT_CONFIGURATIONS = (
    "float32,rtn-w4,gptq-w4,rtn-w4-g32,gptq-w4-g32-act,"
    "rtn-w3,gptq-w3,rtn-w3-g32,gptq-w3-g32-act"
)

_NAME = re.compile(r"(?P<method>[a-z0-9]+)-w(?P<bits>\d+)(?:-g(?P<group>\d+))?(?P<act>-act)?")
_SYNTAX = "float32 or METHOD-wBITS[-gGROUP][-act] with METHOD rtn or gptq (e.g. gptq-w4-g32-act)"

PLOT = "perplexity.png"
TABLE = "perplexity.md"
RESULTS = "perplexity.json"


@dataclass(frozen=True)
class Configuration:
    """One model of the sweep: float32, or a quantization of it."""

    method: str
    bits: int = 32
    group_size: int = -1
    act_order: bool = False

    @property
    def name(self) -> str:
        if self.method == FLOAT:
            return FLOAT
        group = f"-g{self.group_size}" if self.group_size > 0 else ""
        return f"{self.method}-w{self.bits}{group}{'-act' if self.act_order else ''}"

    @property
    def quantized(self) -> bool:
        return self.method != FLOAT

    def pass_options(
        self, calibration: Optional[PathLike], report: PathLike, extra: Sequence[str] = ()
    ) -> str:
        """The option string of ``--gptq-quantize-model`` for this
        configuration, with the ``extra`` options (``key=value``) after it."""
        options = [f"method={self.method}", f"bits={self.bits}", f"group-size={self.group_size}"]
        if self.act_order:
            options.append("act-order=true")
        if self.method == "gptq":
            options.append(f"calibration={_pass_path(calibration)}")
        options.append(f"report={_pass_path(report)}")
        return " ".join(options + list(extra))


#: The options of --gptq-quantize-model that each configuration sets itself.
_OWN_OPTIONS = ("method", "bits", "group-size", "act-order", "calibration", "report")
#: The options of --gptq-quantize-model that name a file it writes, and one
#: it reads.
_OUTPUT_OPTIONS = ("dump-hessians", "dump-stages")
_INPUT_OPTIONS = ("hessians",)


def parse_pass_options(text: str) -> List[str]:
    """More ``--gptq-quantize-model`` options for every configuration,
    ``key=value`` separated by spaces; GPTQError for the options the
    configurations set themselves (and for anything but ``key=value``)."""
    options = text.split()
    for option in options:
        key, equals, value = option.partition("=")
        if not equals or not key or not value or re.search(r"['\"{}]", option):
            raise GPTQError(f"expected KEY=VALUE options separated by spaces, got {option!r}")
        if key in _OWN_OPTIONS:
            raise GPTQError(f"option {key!r} is set by each configuration; choose it with --configs")
    return options


def _pass_path(path: Optional[PathLike]) -> str:
    """A file name as a pass option's value; names the option parser would
    split (spaces, quotes, braces) are refused."""
    text = str(path)
    if not text or re.search(r"[\s'\"{}]", text):
        raise GPTQError(
            f"file name {text!r} cannot be passed to gptq-opt's pass options "
            f"(it is empty or holds spaces, quotes or braces)"
        )
    return text


def parse_configuration(text: str) -> Configuration:
    """The configuration named ``text``; GPTQError if the name is not one."""
    text = text.strip()
    if text == FLOAT:
        return Configuration(FLOAT)
    match = _NAME.fullmatch(text)
    if match is None or match["method"] not in METHODS:
        raise GPTQError(f"unknown configuration {text!r}: expected {_SYNTAX}")
    bits = int(match["bits"])
    if not 2 <= bits <= 8:
        raise GPTQError(f"configuration {text!r}: bits must lie in [2, 8], got {bits}")
    group_size = int(match["group"]) if match["group"] is not None else -1
    if group_size == 0:
        raise GPTQError(f"configuration {text!r}: the group size must be positive")
    act_order = match["act"] is not None
    if act_order and match["method"] != "gptq":
        raise GPTQError(
            f"configuration {text!r}: act-order needs gptq (round to nearest uses no Hessian)"
        )
    configuration = Configuration(match["method"], bits, group_size, act_order)
    if configuration.name != text:
        # e.g. leading zeros: the name is also the output's file name.
        raise GPTQError(f"configuration {text!r}: write it {configuration.name!r}")
    return configuration


def parse_configurations(text: str) -> List[Configuration]:
    """A comma-separated list of configurations, float32 first (added when
    missing: it is the baseline of every ratio)."""
    names = [name.strip() for name in text.split(",")]
    if not any(names):
        raise GPTQError(f"no configuration given: expected a comma-separated list of {_SYNTAX}")
    configurations = [parse_configuration(name) for name in names]
    seen = set()
    for configuration in configurations:
        if configuration in seen:
            raise GPTQError(f"configuration {configuration.name!r} is given twice")
        seen.add(configuration)
    baseline = Configuration(FLOAT)
    return [baseline] + [c for c in configurations if c != baseline]


def _import_pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as pyplot
    except ImportError as error:
        raise GPTQError(
            f"the plot needs matplotlib, which cannot be imported ({error}); "
            f"scripts/setup.sh installs it"
        ) from None
    return pyplot


@dataclass
class _Result:
    configuration: Configuration
    model: Path
    perplexity: float = math.nan
    seconds: Optional[float] = None
    report: Optional[dict] = None

    def weight_bytes(self, float_bytes: Optional[int]) -> Optional[int]:
        if self.report is None:
            return float_bytes
        return int(self.report["quantized_weight_bytes"])


def _read_report(path: Path, name: str) -> dict:
    try:
        with open(path, "r", encoding="utf-8") as handle:
            report = json.load(handle)
    except (OSError, ValueError) as error:
        raise GPTQError(f"cannot read gptq-opt's report for {name} ({path}): {error}") from error
    for key in ("weight_bytes", "quantized_weight_bytes"):
        if not isinstance(report.get(key), int):
            raise GPTQError(f"gptq-opt's report for {name} ({path}) has no integer {key!r}")
    return report


def _format_bytes(count: Optional[int]) -> str:
    return "-" if count is None else f"{count:,}"


def markdown_table(results: Sequence[dict]) -> str:
    """The results (``perplexity.json``'s ``configurations``) as a markdown table."""
    lines = [
        "| configuration | method | bits | group size | act-order | perplexity "
        "| vs float32 | weight bytes | quantize s |",
        "| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        quantized = r["method"] != FLOAT
        group = ("row" if r["group_size"] < 0 else str(r["group_size"])) if quantized else "-"
        act = ("yes" if r["act_order"] else "no") if quantized else "-"
        seconds = "-" if r["seconds"] is None else f"{r['seconds']:.1f}"
        lines.append(
            f"| {r['name']} | {r['method']} | {r['bits']} | {group} | {act} "
            f"| {r['perplexity']:.4f} | {r['ratio']:.3f} | {_format_bytes(r['weight_bytes'])} "
            f"| {seconds} |"
        )
    return "\n".join(lines) + "\n"


def _series_label(method: str, group_size: int, act_order: bool) -> str:
    parts = [method.upper() if method == "rtn" else "GPTQ"]
    parts.append("per row" if group_size < 0 else f"group {group_size}")
    if act_order:
        parts.append("act-order")
    return ", ".join(parts)


def write_plot(pyplot, path: Path, results: Sequence[dict], title: str) -> None:
    """Perplexity against bits: a line per method and grouping (per row
    solid, grouped dashed), float32 as a horizontal line."""
    from matplotlib.ticker import ScalarFormatter

    colors = {"rtn": "tab:orange", "gptq": "tab:blue"}
    series: Dict[tuple, List[dict]] = {}
    for r in results:
        if r["method"] != FLOAT:
            series.setdefault((r["method"], r["group_size"], r["act_order"]), []).append(r)
    dpi = 100
    figure, axes = pyplot.subplots(figsize=(6.4, 4.2), dpi=dpi)
    try:
        labels: Dict[int, List[tuple]] = {}
        for (method, group_size, act_order), points in sorted(series.items()):
            points = sorted(points, key=lambda r: r["bits"])
            bits = [r["bits"] for r in points]
            values = [r["perplexity"] for r in points]
            color = colors.get(method, "tab:gray")
            axes.plot(
                bits, values, marker="o", color=color,
                linestyle="-" if group_size < 0 else "--",
                label=_series_label(method, group_size, act_order),
            )
            for x, y in zip(bits, values):
                labels.setdefault(x, []).append((y, color))
        base = next(r for r in results if r["method"] == FLOAT)
        axes.axhline(base["perplexity"], color="black", linestyle=":", linewidth=1,
                     label=f"float32 ({base['perplexity']:.2f})")
        all_bits = sorted({r["bits"] for r in results if r["method"] != FLOAT})
        if all_bits:
            axes.set_xticks(all_bits)
            axes.set_xlim(min(all_bits) - 0.5, max(all_bits) + 0.5)
        axes.set_yscale("log")
        axes.yaxis.set_major_formatter(ScalarFormatter())
        axes.yaxis.set_minor_formatter(ScalarFormatter())
        axes.set_xlabel("bits per weight")
        axes.set_ylabel("perplexity (log scale)")
        axes.set_title(title, fontsize=10)
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(fontsize=8, handlelength=3.5)
        figure.tight_layout()
        _label_points(axes, labels, dpi)
        figure.savefig(path, format="png", metadata={"Software": None})
    finally:
        pyplot.close(figure)


def _label_points(axes, labels: Dict[int, List[tuple]], dpi: int) -> None:
    """Write each point's value beside it: left of the leftmost bits, right
    of the others, moved apart vertically where they would overlap."""
    gap = 9.0  # points, a little more than the 7-point text
    leftmost = min(labels, default=None)
    for x, points in labels.items():
        placed = None
        for y, color in sorted(points):
            height = axes.transData.transform((x, y))[1] * 72.0 / dpi
            shown = height if placed is None else max(height, placed + gap)
            placed = shown
            left = x == leftmost and len(labels) > 1
            axes.annotate(
                f"{y:.2f}", (x, y), textcoords="offset points", xytext=(-8 if left else 8, shown - height),
                fontsize=7, va="center", ha="right" if left else "left", color=color,
            )


def output_names(configurations: Sequence[Configuration], archives: bool = False) -> List[str]:
    """The files a sweep of ``configurations`` writes into its output folder;
    with ``archives`` (a model that reads its weights from parameter
    archives, as import-hf's does), each quantized model's archive of
    quantized weights too (``NAME.safetensors``, which gptq-opt writes
    beside ``NAME.mlir``)."""
    suffixes = (".mlir", ".report.json") + ((".safetensors",) if archives else ())
    names = [f"{c.name}{suffix}" for c in configurations if c.quantized for suffix in suffixes]
    return names + [RESULTS, TABLE, PLOT]


def _file_options(pass_options: Sequence[str], keys: Sequence[str]) -> List[tuple]:
    """(key, value) of the options among ``pass_options`` whose key is in ``keys``."""
    pairs = [option.partition("=") for option in pass_options]
    return [(key, value) for key, _, value in pairs if key in keys]


def declare(
    run: Run,
    configurations: Sequence[Configuration],
    out_dir: PathLike,
    calibration: Optional[PathLike],
    pass_options: Sequence[str] = (),
    archives: bool = False,
) -> None:
    """Check the arguments of :func:`sweep` and declare its files in ``run``:
    the outputs in ``out_dir`` (with ``archives``, for a model that reads
    its weights from parameter archives, each quantized model's archive
    too: see :func:`output_names`), and the files the ``pass_options`` name
    (``hessians=`` an input; ``dump-hessians=`` and ``dump-stages=``
    outputs, which only a sweep of one quantized configuration may ask
    for: every configuration would write them). The caller declares the
    other inputs. GPTQError for bad arguments, before any work."""
    if not str(out_dir):
        raise GPTQError("the output folder's name is empty")
    _import_pyplot()
    configurations = list(configurations)
    if not configurations or configurations[0] != Configuration(FLOAT):
        raise GPTQError("the configurations must start with float32")
    quantized = [c for c in configurations if c.quantized]
    if quantized:
        runner.require_opt()
    if any(c.method == "gptq" for c in quantized):
        if calibration is None:
            raise GPTQError("gptq configurations need calibration samples (--calibration FILE.npy)")
        try:
            with open(calibration, "rb"):
                pass
        except OSError as error:
            raise GPTQError(f"cannot read calibration {calibration}: {error.strerror or error}") from error
        _pass_path(calibration)
    run.output_folder(out_dir, output_names(configurations, archives))
    for key, value in _file_options(pass_options, _INPUT_OPTIONS):
        run.input(value, f"{key}= file")
    for key, value in _file_options(pass_options, _OUTPUT_OPTIONS):
        if len(quantized) != 1:
            raise GPTQError(
                f"--pass-options {key}={value}: each quantized configuration would write it, and "
                f"there are {len(quantized)}; give one with --configs"
            )
        _pass_path(value)
        run.output(value, f"{key}={value}")


def sweep(
    model: Model,
    windows: np.ndarray,
    configurations: Sequence[Configuration],
    run: Run,
    out_dir: PathLike,
    calibration: Optional[PathLike],
    batch: int = 32,
    pass_options: Sequence[str] = (),
    description: Optional[dict] = None,
    progress: TextIO = sys.stderr,
) -> dict:
    """Quantize ``model`` in every configuration, measure every model's
    perplexity on ``windows`` and write the outputs, which :func:`declare`
    declared in ``run``, into its temporaries; ``run`` puts them in place
    when it ends.

    ``pass_options`` go to every run of ``--gptq-quantize-model`` (see
    :func:`parse_pass_options`), the files they write redirected to their
    temporaries in ``run``. ``description`` goes into ``perplexity.json``
    as it is. Returns what ``perplexity.json`` holds. Raises GPTQError on
    any failure.
    """
    out_path = Path(out_dir)
    pyplot = _import_pyplot()
    configurations = list(configurations)
    quantized = [c for c in configurations if c.quantized]
    redirected = dict(_file_options(pass_options, _OUTPUT_OPTIONS))
    extra = []
    for option in pass_options:
        key, _, value = option.partition("=")
        extra.append(f"{key}={_pass_path(run.path(value))}" if key in redirected else option)

    def say(text: str) -> None:
        print(f"sweep: {text}", file=progress, flush=True)

    try:
        results = [_Result(configurations[0], model.path)]
        for index, configuration in enumerate(quantized, 1):
            name = configuration.name
            output = run.path(out_path / f"{name}.mlir")
            report = run.path(out_path / f"{name}.report.json")
            options = configuration.pass_options(calibration, report, extra)
            say(f"[{index}/{len(quantized)}] {name}: gptq-opt --gptq-quantize-model=\"{options}\"")
            start = time.perf_counter()
            runner.run_opt(
                model.path, output, [f"--gptq-quantize-model={options}"],
                on_line=lambda line: print(line, file=progress, flush=True),
            )
            seconds = time.perf_counter() - start
            results.append(_Result(configuration, output, seconds=seconds,
                                   report=_read_report(report, name)))
            say(f"{name}: quantized in {seconds:.1f} s")
        for index, result in enumerate(results, 1):
            name = result.configuration.name
            say(f"[{index}/{len(results)}] {name}: perplexity on {len(windows)} windows "
                f"of {windows.shape[1]} tokens")
            shown = f"{name} ({out_path / f'{name}.mlir'})" if result.configuration.quantized else str(model.path)
            result.perplexity = perplexity(Model(result.model), windows, batch, progress, shown)["perplexity"]
            say(f"{name}: perplexity {result.perplexity:.4f}")

        float_bytes = next((int(r.report["weight_bytes"]) for r in results if r.report), None)
        base = results[0].perplexity
        rows = []
        for result in results:
            c = result.configuration
            rows.append({
                "name": c.name,
                "method": c.method,
                "bits": c.bits,
                "group_size": c.group_size,
                "act_order": c.act_order,
                "perplexity": result.perplexity,
                "ratio": result.perplexity / base,
                "weight_bytes": result.weight_bytes(float_bytes),
                "seconds": result.seconds,
                "model": f"{c.name}.mlir" if c.quantized else str(model.path),
                "report": f"{c.name}.report.json" if c.quantized else None,
            })
        document = dict(description or {})
        document.update({"windows": int(len(windows)), "seqlen": int(windows.shape[1]),
                         "tokens": int(len(windows) * (windows.shape[1] - 1)),
                         "configurations": rows})
        with open(run.path(out_path / RESULTS), "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=2)
            handle.write("\n")
        table = markdown_table(rows)
        with open(run.path(out_path / TABLE), "w", encoding="utf-8") as handle:
            handle.write(table)
        title = f"{model.path.stem}: perplexity on {len(windows)} windows of {windows.shape[1]} tokens"
        write_plot(pyplot, run.path(out_path / PLOT), rows, title)
    except OSError as error:
        raise GPTQError(f"cannot write {error.filename or out_dir}: {error.strerror or error}") from error
    return document
