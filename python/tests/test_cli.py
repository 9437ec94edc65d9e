"""The command line's failures: one line, ``gptq_mlir: error: ...``, exit
status 1, no traceback and no output file; and outputs created with the
permissions a plain open() gives."""

import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO_ROOT, assert_one_line_error
from gptq_mlir.cli import commands
from gptq_mlir.errors import GPTQError
from gptq_mlir.files.outputs import atomic_output, save_npy

PACKAGE_ROOT = Path(commands.__file__).parents[2]


def _run(*args: str, cwd=None) -> subprocess.CompletedProcess:
    """``python -m gptq_mlir ARGS`` in a fresh process."""
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_ROOT))
    return subprocess.run(
        [sys.executable, "-m", "gptq_mlir", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )


@pytest.fixture()
def short_text(tmp_path) -> Path:
    path = tmp_path / "text.txt"
    path.write_text("Once upon a time, there was a little girl named Lily.\n\nShe loved to play.\n")
    return path


def _calib(tokenizer_path, text, output, *extra):
    return ["calib", "--tokenizer", str(tokenizer_path), "--text", str(text),
            "--samples", "2", "--seqlen", "4", "-o", str(output), *extra]


@pytest.mark.parametrize(
    "option, value, fragment",
    [
        ("--seed", "-1", "argument --seed: expected an integer >= 0, got -1"),
        ("--seed", "x", "argument --seed: expected an integer, got 'x'"),
        ("--samples", "0", "argument --samples: expected an integer >= 1, got 0"),
        ("--end-fraction", "nan", "argument --end-fraction: expected a number in [0, 1], got nan"),
    ],
)
def test_bad_arguments(tokenizer_path, short_text, tmp_path, option, value, fragment):
    output = tmp_path / "out.npy"
    assert_one_line_error(_run(*_calib(tokenizer_path, short_text, output, option, value)), "calib: " + fragment)
    assert not output.exists()


def test_bad_command_and_missing_options():
    assert_one_line_error(_run("no-such-command"), "invalid choice: 'no-such-command'")
    assert_one_line_error(_run("import-llama2c"), "import-llama2c: the following arguments are required")
    assert _run("--help").returncode == 0
    assert commands.main(["calib", "--help"]) == 0
    assert commands.main(["calib", "--seed", "-1"]) == 1


@pytest.mark.parametrize("where", ["missing/out.npy", "readonly/out.npy", "."])
def test_unwritable_output(tokenizer_path, short_text, tmp_path, where):
    (tmp_path / "readonly").mkdir(mode=0o555)
    output = tmp_path / where
    if where.startswith("readonly") and os.access(tmp_path / "readonly", os.W_OK):
        pytest.skip("running as root: a read-only folder is writable")
    result = _run(*_calib(tokenizer_path, short_text, output), cwd=tmp_path)
    assert_one_line_error(result, f"cannot write {output}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["readonly", "text.txt"]


def test_unwritable_module(checkpoint_path, tmp_path):
    output = tmp_path / "missing" / "model.mlir"
    assert_one_line_error(_run("import-llama2c", str(checkpoint_path), "-o", str(output)), f"cannot write {output}")


def test_memory_error(tokenizer_path, short_text, tmp_path):
    """A request for more memory than there is: numpy's MemoryError."""
    output = tmp_path / "out.npy"
    result = _run(*_calib(tokenizer_path, short_text, output, "--samples", str(10**15)))
    assert_one_line_error(result, "out of memory")
    assert not output.exists()


@pytest.mark.parametrize(
    "error, message",
    [
        (PermissionError(13, "Permission denied", "/some/file"), "gptq_mlir: error: /some/file: Permission denied"),
        (MemoryError(), "gptq_mlir: error: out of memory"),
        (GPTQError("bad input"), "gptq_mlir: error: bad input"),
    ],
)
def test_main_maps_system_errors(monkeypatch, capsys, error, message):
    """Whatever a command does not turn into a GPTQError itself is still one
    line: an OSError names its file, a MemoryError says so."""

    def fail(path):
        raise error

    monkeypatch.setattr(commands.llama2c, "read_checkpoint", fail)
    assert commands.main(["import-llama2c", "model.bin", "-o", "model.mlir"]) == 1
    assert capsys.readouterr().err == message + "\n"


def test_full_disk_is_an_error_without_output(tmp_path):
    path = tmp_path / "a.bin"
    with pytest.raises(GPTQError, match=f"cannot write {path}: No space left on device"):
        with atomic_output(path) as handle:
            handle.write(b"partial")
            raise OSError(28, "No space left on device")
    assert list(tmp_path.iterdir()) == []


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_outputs_follow_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        save_npy(tmp_path / "a.npy", np.zeros(3, np.float32))
        with open(tmp_path / "plain", "wb"):
            pass
    finally:
        os.umask(old)
    assert _mode(tmp_path / "a.npy") == _mode(tmp_path / "plain") == 0o666 & ~umask


def test_replaced_output_keeps_its_mode(tmp_path):
    path = tmp_path / "a.npy"
    path.write_bytes(b"old")
    path.chmod(0o640)
    save_npy(path, np.zeros(3, np.float32))
    assert _mode(path) == 0o640
    np.testing.assert_array_equal(np.load(path), np.zeros(3, np.float32))


def test_failed_write_leaves_nothing(tmp_path):
    path = tmp_path / "a.bin"
    with pytest.raises(RuntimeError):
        with atomic_output(path) as handle:
            handle.write(b"partial")
            raise RuntimeError("interrupted")
    assert list(tmp_path.iterdir()) == []


def test_devices_are_written_not_replaced(tmp_path):
    # Through a link, so that a regression would replace the link, not
    # /dev/null itself.
    null = tmp_path / "null"
    null.symlink_to("/dev/null")
    save_npy(null, np.zeros(3, np.float32))
    assert stat.S_ISCHR(null.stat().st_mode)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    save_npy(fifo, np.arange(3, dtype=np.float32))
    data = reader.communicate(timeout=30)[0]
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert data.startswith(b"\x93NUMPY")


def test_samples_beyond_any_array(tokenizer_path, short_text, tmp_path):
    """Refused before anything is allocated, naming the bound."""
    output = tmp_path / "out.npy"
    result = _run(*_calib(tokenizer_path, short_text, output, "--samples", "99999999999999999999"))
    assert_one_line_error(result, "--samples 99999999999999999999 x --seqlen 4", f"({sys.maxsize} bytes)")
    assert not output.exists()


@pytest.mark.parametrize(
    "error, message",
    [
        (RecursionError("maximum recursion depth exceeded"),
         "gptq_mlir: error: internal error: RecursionError: maximum recursion depth exceeded"),
        (KeyError("dim"), "gptq_mlir: error: internal error: KeyError: 'dim'"),
        (ValueError("two\nlines"), "gptq_mlir: error: internal error: ValueError: two\\nlines"),
        (GPTQError("bad\r\ninput"), "gptq_mlir: error: bad\\r\\ninput"),
    ],
)
def test_unexpected_exceptions_are_one_line(monkeypatch, capsys, tmp_path, error, message):
    """Any exception, not only the package's own: one line, with the type
    of one that is no GPTQError, line breaks escaped; exit status 1."""

    def fail(path):
        raise error

    monkeypatch.setattr(commands.llama2c, "read_checkpoint", fail)
    assert commands.main(["import-llama2c", "model.bin", "-o", str(tmp_path / "model.mlir")]) == 1
    assert capsys.readouterr().err == message + "\n"
    assert list(tmp_path.iterdir()) == []


def test_keyboard_interrupt_is_exit_130(monkeypatch, capsys, tmp_path):
    def interrupt(path):
        raise KeyboardInterrupt

    monkeypatch.setattr(commands.llama2c, "read_checkpoint", interrupt)
    output = tmp_path / "model.mlir"
    assert commands.main(["import-llama2c", "model.bin", "-o", str(output)]) == 130
    assert capsys.readouterr().err == "gptq_mlir: error: interrupted\n"
    assert list(tmp_path.iterdir()) == []


def test_error_when_sys_stderr_is_closed(monkeypatch, capfd):
    """The message goes to descriptor 2 when the stream cannot take it."""
    import io

    closed = io.StringIO()
    closed.close()
    monkeypatch.setattr(sys, "stderr", closed)
    assert commands.main(["no-such-command"]) == 1
    assert commands.main(["calib", "--seed", "-1"]) == 1
    err = capfd.readouterr().err.splitlines()
    assert len(err) == 2 and all(line.startswith("gptq_mlir: error: ") for line in err), err


@pytest.mark.parametrize("command", ["perplexity", "generate", "sweep"])
def test_model_that_is_not_utf8(gptq_run, gptq_opt, tokenizer_path, short_text, tmp_path, command):
    """The parser quotes the bad byte back in its diagnostic: still one line."""
    model = tmp_path / "bad.mlir"
    model.write_bytes(b"module {\xff}\n")
    args = {
        "perplexity": ["--text", str(short_text), "--seqlen", "4"],
        "generate": [],
        "sweep": ["--text", str(short_text), "--seqlen", "4", "--out-dir", str(tmp_path / "out"),
                  "--configs", "rtn-w4"],
    }[command]
    result = _run(command, "--model", str(model), "--tokenizer", str(tokenizer_path), *args)
    assert_one_line_error(result, f"{model}:1:", "error: unexpected character")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.mlir", "text.txt"]


def test_console_command_is_python_m():
    """pyproject.toml's gptq-mlir command runs the entry that ``python -m
    gptq_mlir`` runs, as pip's wrapper script calls it."""
    import tomllib

    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"] == {"gptq-mlir": "gptq_mlir.cli.console:main"}
    assert "from .cli.console import main" in (REPO_ROOT / "python" / "gptq_mlir" / "__main__.py").read_text()
    wrapper = "import sys; from gptq_mlir.cli.console import main; sys.argv[0] = 'gptq-mlir'; sys.exit(main())"
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "python"))
    ran = [subprocess.run([sys.executable, *how, "import-llama2c", "/nonexistent.bin", "-o", "/tmp/x.mlir"],
                          capture_output=True, text=True, env=env)
           for how in (["-c", wrapper], ["-m", "gptq_mlir"])]
    assert ran[0].returncode == ran[1].returncode == 1
    assert ran[0].stderr == ran[1].stderr
    assert ran[0].stderr.startswith("gptq_mlir: error: ")
