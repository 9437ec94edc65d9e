"""``python -m gptq_mlir sweep``: configurations, the staged outputs, and a
small sweep of stories260K through gptq-opt and gptq-run (skipped when they
are not built)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gptq_mlir.cli import commands, sweep
from gptq_mlir.cli.sweep import Configuration, parse_configuration, parse_configurations
from gptq_mlir.data import corpus
from gptq_mlir.errors import GPTQError
from gptq_mlir.files.outputs import StagedOutputs
from gptq_mlir.runtime import runner
from gptq_mlir.runtime.model import Model, perplexity

PACKAGE_ROOT = Path(commands.__file__).parents[2]
SEQLEN = 16


def _run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_ROOT))
    return subprocess.run(
        [sys.executable, "-m", "gptq_mlir", "sweep", *args],
        capture_output=True, text=True, env=env, timeout=600,
    )


def _assert_one_line_error(result: subprocess.CompletedProcess, *fragments: str, progress: bool = False) -> str:
    """Exit status 1 and one error line, the last on stderr; before it,
    with ``progress``, the sweep's progress lines, and no other error line."""
    assert result.returncode == 1, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 or progress and len(lines) > 1, result.stderr
    assert lines[-1].startswith("gptq_mlir: error: "), lines[-1]
    assert not any("error:" in line for line in lines[:-1]), result.stderr
    for fragment in fragments:
        assert fragment in lines[-1], lines[-1]
    assert result.stdout == ""
    return lines[-1]


# --- configurations ---------------------------------------------------------


def test_default_configurations():
    names = [c.name for c in parse_configurations(sweep.DEFAULT_CONFIGURATIONS)]
    assert names == [
        "float32", "rtn-w4", "gptq-w4", "rtn-w4-g32", "gptq-w4-g32-act",
        "rtn-w3", "gptq-w3", "rtn-w3-g32", "gptq-w3-g32-act",
    ]


def test_configuration_names_and_pass_options():
    c = parse_configuration("gptq-w3-g32-act")
    assert c == Configuration("gptq", 3, 32, True)
    assert c.pass_options("c.npy", "r.json") == (
        "method=gptq bits=3 group-size=32 act-order=true calibration=c.npy report=r.json"
    )
    assert parse_configuration("rtn-w4").pass_options(None, "r.json") == (
        "method=rtn bits=4 group-size=-1 report=r.json"
    )
    assert parse_configuration("gptq-w4-act") == Configuration("gptq", 4, -1, True)
    # float32 is always there, first.
    assert [c.name for c in parse_configurations("gptq-w4, rtn-w3")] == ["float32", "gptq-w4", "rtn-w3"]
    assert [c.name for c in parse_configurations("rtn-w3,float32")] == ["float32", "rtn-w3"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("gptq-w9", "configuration 'gptq-w9': bits must lie in [2, 8], got 9"),
        ("awq-w4", "unknown configuration 'awq-w4': expected float32 or METHOD-wBITS"),
        ("gptq4", "unknown configuration 'gptq4'"),
        ("rtn-w4-act", "configuration 'rtn-w4-act': act-order needs gptq"),
        ("gptq-w4-g0", "the group size must be positive"),
        ("gptq-w04", "configuration 'gptq-w04': write it 'gptq-w4'"),
        ("gptq-w4,gptq-w4", "configuration 'gptq-w4' is given twice"),
        ("", "no configuration given"),
    ],
)
def test_bad_configurations(text, message):
    with pytest.raises(GPTQError) as caught:
        parse_configurations(text)
    assert message in str(caught.value)


def test_bad_configurations_on_the_command_line(tmp_path):
    result = _run("--model", "m.mlir", "--tokenizer", "t.bin", "--text", "x.txt", "--seqlen", "8",
                  "--out-dir", str(tmp_path / "out"), "--configs", "rtn-w4,gptq-w9")
    _assert_one_line_error(result, "sweep: argument --configs: configuration 'gptq-w9': bits must lie in [2, 8]")
    assert not (tmp_path / "out").exists()


def test_pass_options():
    assert sweep.parse_pass_options(" sym=true  sequential=blocks ") == ["sym=true", "sequential=blocks"]
    with pytest.raises(GPTQError, match="option 'bits' is set by each configuration; choose it with --configs"):
        sweep.parse_pass_options("sym=true bits=4")
    with pytest.raises(GPTQError, match="expected KEY=VALUE options separated by spaces, got 'sym'"):
        sweep.parse_pass_options("sym")
    with pytest.raises(GPTQError, match="got 'include=\"a'"):
        sweep.parse_pass_options('include="a b"')


def test_markdown_table():
    rows = [
        {"name": "float32", "method": "float32", "bits": 32, "group_size": -1, "act_order": False,
         "perplexity": 5.0, "ratio": 1.0, "weight_bytes": 1234567, "seconds": None},
        {"name": "gptq-w4-g32-act", "method": "gptq", "bits": 4, "group_size": 32, "act_order": True,
         "perplexity": 5.5, "ratio": 1.1, "weight_bytes": 200000, "seconds": 61.25},
        {"name": "rtn-w3", "method": "rtn", "bits": 3, "group_size": -1, "act_order": False,
         "perplexity": 15.0, "ratio": 3.0, "weight_bytes": 100000, "seconds": 1.0},
    ]
    assert sweep.markdown_table(rows).splitlines()[2:] == [
        "| float32 | float32 | 32 | - | - | 5.0000 | 1.000 | 1,234,567 | - |",
        "| gptq-w4-g32-act | gptq | 4 | 32 | yes | 5.5000 | 1.100 | 200,000 | 61.2 |",
        "| rtn-w3 | rtn | 3 | row | no | 15.0000 | 3.000 | 100,000 | 1.0 |",
    ]


# --- staged outputs ---------------------------------------------------------


def test_staged_outputs_are_renamed_together(tmp_path):
    out = tmp_path / "a" / "b"
    with StagedOutputs(out) as staged:
        staged.path("x.txt").write_text("x")
        staged.path("y.txt").write_text("y")
        assert sorted(p.name for p in out.iterdir()) == [staged.staging.name]
        staged.commit()
    assert sorted(p.name for p in out.iterdir()) == ["x.txt", "y.txt"]
    assert (out / "y.txt").read_text() == "y"


def test_staged_outputs_discarded_on_failure(tmp_path):
    # A folder that exists keeps what it held; one that was made is removed.
    (tmp_path / "old.txt").write_text("old")
    (tmp_path / "x.txt").write_text("previous x")
    with pytest.raises(RuntimeError):
        with StagedOutputs(tmp_path) as staged:
            staged.path("x.txt").write_text("new x")
            raise RuntimeError("interrupted")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.txt", "x.txt"]
    assert (tmp_path / "x.txt").read_text() == "previous x"
    with pytest.raises(RuntimeError):
        with StagedOutputs(tmp_path / "new") as staged:
            staged.path("x.txt").write_text("x")
            raise RuntimeError("interrupted")
    assert not (tmp_path / "new").exists()


def test_staged_outputs_refuse_a_file_and_an_empty_name(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(GPTQError, match="exists and is not a folder"):
        StagedOutputs(tmp_path / "file")
    with pytest.raises(GPTQError, match="the output folder's name is empty"):
        StagedOutputs("")


# --- a small sweep of stories260K -------------------------------------------


@pytest.fixture(scope="module")
def small_inputs(tmp_path_factory, text_path, tokenizer_path):
    """Twelve paragraphs of TinyStories (the first half calibrates, the
    second is measured) and four calibration windows of 16 tokens."""
    root = tmp_path_factory.mktemp("sweep-inputs")
    text = root / "text.txt"
    paragraphs = corpus.split_paragraphs(corpus.read_text(text_path))[:12]
    text.write_text("\n\n".join(paragraphs) + "\n")
    calib = root / "calib.npy"
    assert commands.main(["calib", "--tokenizer", str(tokenizer_path), "--text", str(text), "--end-fraction", "0.5",
                     "--samples", "4", "--seqlen", str(SEQLEN), "-o", str(calib)]) == 0
    return text, calib


#: Only block 0's layers are quantized, to keep the tests short.
PASS_OPTIONS = r"include=^layers\.0\. calibration-batch=2"


def _sweep_args(stories_mlir, tokenizer_path, text, calib, out, configs):
    return ["--model", str(stories_mlir), "--tokenizer", str(tokenizer_path), "--text", str(text),
            "--calibration", str(calib), "--out-dir", str(out), "--configs", configs,
            "--seqlen", str(SEQLEN), "--start-fraction", "0.5", "--batch", "64",
            "--pass-options", PASS_OPTIONS]


@pytest.fixture(scope="module")
def small_sweep(gptq_opt, gptq_run, stories_mlir, tokenizer_path, small_inputs, tmp_path_factory):
    text, calib = small_inputs
    out = tmp_path_factory.mktemp("sweep") / "out"
    result = _run(*_sweep_args(stories_mlir, tokenizer_path, text, calib, out, "rtn-w4,gptq-w3"))
    assert result.returncode == 0, result.stderr
    return out, result


def test_sweep_outputs(small_sweep):
    out, _ = small_sweep
    assert sorted(p.name for p in out.iterdir()) == [
        "gptq-w3.mlir", "gptq-w3.report.json", "perplexity.json", "perplexity.md", "perplexity.png",
        "rtn-w4.mlir", "rtn-w4.report.json",
    ]
    for name, method, bits in [("rtn-w4", "rtn", 4), ("gptq-w3", "gptq", 3)]:
        report = json.loads((out / f"{name}.report.json").read_text())
        assert (report["config"]["method"], report["config"]["bits"]) == (method, bits)
        assert [layer["name"] for layer in report["layers"]] == [
            f"layers.0.{name}" for name in ["attention.wq", "attention.wk", "attention.wv", "attention.wo",
                                            "feed_forward.w1", "feed_forward.w3", "feed_forward.w2"]
        ]
        assert "gptq.unpack" in (out / f"{name}.mlir").read_text()


def test_sweep_results(small_sweep, tokenizer_path, small_inputs):
    out, result = small_sweep
    document = json.loads((out / "perplexity.json").read_text())
    rows = document["configurations"]
    assert [r["name"] for r in rows] == ["float32", "rtn-w4", "gptq-w3"]
    assert document["seqlen"] == SEQLEN and document["start_fraction"] == 0.5

    # The perplexities are those of the models on the held-out windows
    # (checked for the last: the others are computed alike).
    text, _ = small_inputs
    from gptq_mlir.data.tokenizer import load_tokenizer

    stream = corpus.load_corpus(load_tokenizer(tokenizer_path), text, 0.5, 1.0)
    windows = corpus.consecutive_windows(stream, SEQLEN)
    assert document["windows"] == len(windows)
    want = perplexity(Model(out / "gptq-w3.mlir"), windows, 64, progress=None)["perplexity"]
    assert rows[2]["perplexity"] == pytest.approx(want, rel=1e-12)
    assert len({r["perplexity"] for r in rows}) == 3
    for row in rows:
        assert row["ratio"] == pytest.approx(row["perplexity"] / rows[0]["perplexity"])

    # Weight bytes: the float layers' from the reports, then each quantized model's.
    rtn = json.loads((out / "rtn-w4.report.json").read_text())
    gptq = json.loads((out / "gptq-w3.report.json").read_text())
    assert rows[0]["weight_bytes"] == rtn["weight_bytes"] == gptq["weight_bytes"]
    assert rows[1]["weight_bytes"] == rtn["quantized_weight_bytes"] < rtn["weight_bytes"]
    assert rows[2]["weight_bytes"] == gptq["quantized_weight_bytes"] < rtn["quantized_weight_bytes"]
    assert rows[0]["seconds"] is None and all(r["seconds"] > 0 for r in rows[1:])

    # The table, printed and written.
    table = result.stdout
    assert (out / "perplexity.md").read_text() == table
    lines = table.splitlines()
    assert lines[0].startswith("| configuration | method | bits | group size | act-order | perplexity")
    assert lines[2].startswith(f"| float32 | float32 | 32 | - | - | {rows[0]['perplexity']:.4f} | 1.000 |")
    assert lines[3].startswith(f"| rtn-w4 | rtn | 4 | row | no | {rows[1]['perplexity']:.4f} |")
    assert lines[4].startswith(f"| gptq-w3 | gptq | 3 | row | no | {rows[2]['perplexity']:.4f} |")
    assert len(lines) == 5

    # Progress on stderr: the sweep's own lines and gptq-opt's.
    err = result.stderr
    assert 'sweep: [1/2] rtn-w4: gptq-opt --gptq-quantize-model="method=rtn bits=4 group-size=-1 report=' in err
    assert f'{PASS_OPTIONS}"' in err
    assert "sweep: [2/2] gptq-w3: gptq-opt" in err
    assert "gptq-quantize-model: " in err
    assert "sweep: [3/3] gptq-w3: perplexity on" in err


def test_sweep_plot(small_sweep):
    out, _ = small_sweep
    png = (out / "perplexity.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    import matplotlib.image

    image = matplotlib.image.imread(out / "perplexity.png")
    assert image.shape[:2] == (420, 640)
    # Not a blank canvas: lines in colour.
    assert np.unique(image.reshape(-1, image.shape[2]), axis=0).shape[0] > 10


def test_missing_calibration_is_one_line_and_no_output(stories_mlir, tokenizer_path, small_inputs, tmp_path):
    text, _ = small_inputs
    out = tmp_path / "out"
    missing = tmp_path / "missing.npy"
    result = _run(*_sweep_args(stories_mlir, tokenizer_path, text, missing, out, "gptq-w4"))
    _assert_one_line_error(result, f"cannot read calibration {missing}: No such file or directory")
    assert not out.exists()


def test_failure_midway_leaves_no_output(gptq_opt, gptq_run, stories_mlir, tokenizer_path, small_inputs, tmp_path):
    """rtn-w4 is quantized, then gptq-opt refuses float calibration data for
    gptq-w4: gptq-opt's error is the one line, and the folder holds what it
    held before (not rtn-w4's files, not a half-written table)."""
    text, _ = small_inputs
    bad = tmp_path / "calib.npy"
    np.save(bad, np.zeros((2, SEQLEN), np.float32))
    out = tmp_path / "out"
    out.mkdir()
    (out / "perplexity.json").write_text("old")
    result = _run(*_sweep_args(stories_mlir, tokenizer_path, text, bad, out, "rtn-w4,gptq-w4"))
    line = _assert_one_line_error(
        result, "gptq-opt failed (exit status 1): ", f"error: gptq-quantize-model: calibration={bad}: found float32",
        progress=True,
    )
    assert "sweep: rtn-w4: quantized in" in result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["perplexity.json"]
    assert (out / "perplexity.json").read_text() == "old"


def test_input_as_output_is_refused(stories_mlir, tokenizer_path, small_inputs, tmp_path):
    text, calib = small_inputs
    out = tmp_path / "out"
    out.mkdir()
    (out / "perplexity.md").symlink_to(text)
    result = _run(*_sweep_args(stories_mlir, tokenizer_path, text, calib, out, "rtn-w4"))
    _assert_one_line_error(result, f"output {out / 'perplexity.md'} is the same file as the text {text}")


def test_missing_gptq_opt(stories_mlir, tokenizer_path, small_inputs, tmp_path, monkeypatch, capsys):
    text, calib = small_inputs
    monkeypatch.setenv("GPTQ_OPT", str(tmp_path / "no-gptq-opt"))
    out = tmp_path / "out"
    assert commands.main(["sweep", *_sweep_args(stories_mlir, tokenizer_path, text, calib, out, "rtn-w4")]) == 1
    err = capsys.readouterr().err
    assert err == (f"gptq_mlir: error: gptq-opt not found at $GPTQ_OPT={tmp_path / 'no-gptq-opt'}: "
                   f"build it first (cmake --build build --target gptq-opt) or point $GPTQ_OPT at it\n")
    assert not out.exists()


def test_empty_out_dir_is_refused(stories_mlir, tokenizer_path, small_inputs, tmp_path):
    text, calib = small_inputs
    args = _sweep_args(stories_mlir, tokenizer_path, text, calib, "", "rtn-w4")
    _assert_one_line_error(_run(*args), "the output folder's name is empty")


def test_sigterm_leaves_no_output(gptq_opt, stories_mlir, tokenizer_path, small_inputs, tmp_path):
    """SIGTERM while gptq-opt runs: gptq-opt is ended, the staged outputs
    removed, and the sweep says so in one line and exits 128 + 15."""
    import signal

    text, calib = small_inputs
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_ROOT))
    process = subprocess.Popen(
        [sys.executable, "-m", "gptq_mlir", "sweep",
         *_sweep_args(stories_mlir, tokenizer_path, text, calib, out, "gptq-w4")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        lines = []
        for line in process.stderr:
            lines.append(line)
            if line.startswith("gptq-quantize-model: "):
                process.send_signal(signal.SIGTERM)
                break
        rest = process.stderr.read()
        process.wait(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 128 + signal.SIGTERM, "".join(lines) + rest
    assert rest.splitlines()[-1] == "gptq_mlir: error: terminated (SIGTERM)"
    assert not out.exists()
