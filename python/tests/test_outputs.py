"""The outputs of the Python commands: an output that is an input or
another output (by any name: a link, a hard link, another spelling) is
refused before any work with one line naming both, and every file is left
as it was; devices and pipes are written in place, never replaced; a
command ended by SIGTERM, SIGINT or SIGHUP removes its temporaries, leaves
the old outputs and says so in one line."""

import hashlib
import os
import re
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List

import numpy as np
import pytest

from conftest import assert_one_line_error, synthetic_checkpoint, write_checkpoint
from gptq_mlir.checkpoints import gptq
from gptq_mlir.cli import commands
from gptq_mlir.importers import emitter, llama2c
from gptq_mlir.runtime import runner
from hf_convert import write_hf_checkpoint

PACKAGE_ROOT = Path(commands.__file__).parents[2]


def _start(*args: str, **kwargs) -> subprocess.Popen:
    """``python -m gptq_mlir ARGS`` in a fresh process, with the default
    handling of the signals that end it (a test run in the background may
    have inherited SIGINT ignored)."""

    def default_signals():
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)

    env = dict(os.environ, PYTHONPATH=str(PACKAGE_ROOT), **kwargs.pop("env", {}))
    return subprocess.Popen(
        [sys.executable, "-m", "gptq_mlir", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=env, preexec_fn=default_signals, **kwargs,
    )


def _run(*args: str) -> subprocess.CompletedProcess:
    process = _start(*args)
    out, err = process.communicate(timeout=300)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def _snapshot(folder: Path) -> Dict[str, str]:
    """Every entry under ``folder``: a link's target, a file's SHA-256."""
    entries = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if path.is_symlink():
            entries[name] = "-> " + os.readlink(path)
        elif path.is_file():
            entries[name] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            entries[name] = "folder"
    return entries


def _temporaries(folder: Path) -> List[str]:
    return [p.name for p in folder.rglob("*") if p.name.endswith(".tmp") or p.name.startswith("gptq-mlir-")]


@pytest.fixture()
def llama2c_folder(tmp_path, checkpoint_path) -> Path:
    """A folder with a copy of stories260K as ck.bin."""
    (tmp_path / "ck.bin").write_bytes(checkpoint_path.read_bytes())
    return tmp_path


# --- inputs as outputs ------------------------------------------------------


@pytest.mark.parametrize("spelling", ["same name", "other spelling", "symlink", "hard link"])
def test_llama2c_checkpoint_as_output(llama2c_folder, spelling):
    checkpoint = llama2c_folder / "ck.bin"
    (llama2c_folder / "sub").mkdir()
    output = {
        "same name": checkpoint,
        "other spelling": llama2c_folder / "sub" / ".." / "." / "ck.bin",
        "symlink": llama2c_folder / "link.mlir",
        "hard link": llama2c_folder / "hard.mlir",
    }[spelling]
    if spelling == "symlink":
        output.symlink_to("ck.bin")
    elif spelling == "hard link":
        os.link(checkpoint, output)
    before = _snapshot(llama2c_folder)
    result = _run("import-llama2c", str(checkpoint), "-o", str(output))
    assert_one_line_error(result, f"output {output} is the same file as the checkpoint {checkpoint}")
    assert _snapshot(llama2c_folder) == before


def test_external_weights_that_are_the_checkpoint(llama2c_folder):
    """The archive beside -o (m.weights.npz beside m.mlir) is the checkpoint."""
    checkpoint = llama2c_folder / "m.weights.npz"
    (llama2c_folder / "ck.bin").rename(checkpoint)
    before = _snapshot(llama2c_folder)
    result = _run("import-llama2c", str(checkpoint), "-o", str(llama2c_folder / "m.mlir"), "--external-weights")
    assert_one_line_error(result, f"output {checkpoint} (the weights of {llama2c_folder / 'm.mlir'}) is the same file as "
                            f"the checkpoint {checkpoint}")
    assert _snapshot(llama2c_folder) == before


@pytest.mark.parametrize("which", ["text", "tokenizer"])
def test_calib_input_as_output(tmp_path, tokenizer_path, which):
    text = tmp_path / "t.txt"
    text.write_text("Once upon a time, there was a little girl named Lily.\n\nShe loved to play.\n")
    tokenizer = tmp_path / "tok.bin"
    tokenizer.write_bytes(tokenizer_path.read_bytes())
    output = {"text": text, "tokenizer": tokenizer}[which]
    before = _snapshot(tmp_path)
    result = _run("calib", "--tokenizer", str(tokenizer), "--text", str(text), "--samples", "2", "--seqlen", "4",
                  "-o", str(output))
    assert_one_line_error(result, f"output {output} is the same file as the {which} {output}")
    assert _snapshot(tmp_path) == before


@pytest.fixture(scope="module")
def stories(checkpoint_path):
    return llama2c.read_checkpoint(checkpoint_path)


@pytest.mark.parametrize(
    "shards, name",
    [(1, "model.safetensors"), (1, "config.json"), (2, "model.safetensors.index.json"),
     (2, "model-00002-of-00002.safetensors")],
)
def test_import_hf_file_as_output(tmp_path, stories, shards, name):
    folder = write_hf_checkpoint(stories, tmp_path / "hf", shards=shards)
    assert (folder / name).is_file()
    before = _snapshot(folder)
    result = _run("import-hf", str(folder), "-o", str(folder / name))
    assert_one_line_error(result, f"output {folder / name} is the same file as the checkpoint file {folder / name}")
    assert _snapshot(folder) == before


@pytest.fixture(scope="module")
def gptq_folder(gptq_opt, gptq_run, tmp_path_factory, stories_mlir) -> Path:
    """A GPTQ checkpoint: block 0's attention of stories260K rounded to
    nearest at 4 bits, exported."""
    root = tmp_path_factory.mktemp("gptq")
    runner.run_opt(stories_mlir, root / "q.mlir", [r"--gptq-quantize-model=method=rtn bits=4 include=^layers\.0\.attention"])
    gptq.export_gptq(root / "q.mlir", root / "checkpoint")
    return root / "checkpoint"


@pytest.mark.parametrize(
    "name, external",
    [("config.json", False), ("quantize_config.json", False), ("model.safetensors", True)],
)
def test_import_gptq_file_as_output(gptq_folder, name, external):
    before = _snapshot(gptq_folder)
    output = gptq_folder / name
    result = _run("import-gptq", str(gptq_folder), "-o", str(output), *(["--external-weights"] if external else []))
    assert_one_line_error(result, f"output {output} is the same file as the checkpoint file {output}")
    assert _snapshot(gptq_folder) == before


@pytest.fixture()
def external_model(tmp_path, checkpoint_path) -> Path:
    """stories260K imported with its weights in stories.weights.npz."""
    model = tmp_path / "model" / "stories.mlir"
    model.parent.mkdir()
    emitter.write_module(llama2c.read_checkpoint(checkpoint_path), model, external_weights=True)
    return model


@pytest.mark.parametrize(
    "option, collides_with",
    [("dump-hessians", "model"), ("dump-hessians", "archive"), ("dump-stages", "output")],
)
def test_sweep_pass_option_output_collides(gptq_opt, gptq_run, tmp_path, external_model, tokenizer_path, text_path,
                                           option, collides_with):
    """A file that --pass-options names for gptq-opt to write is checked as
    every other output: not the model, not its parameter archive, not
    another output of the sweep."""
    calib = tmp_path / "calib.npy"
    np.save(calib, np.zeros((2, 8), np.int32))
    out = tmp_path / "out"
    out.mkdir()
    (out / "gptq-w4.mlir").write_text("old")
    target = {
        "model": external_model,
        "archive": external_model.parent / "stories.weights.npz",
        "output": out / "gptq-w4.mlir",
    }[collides_with]
    before = _snapshot(tmp_path)
    result = _run("sweep", "--model", str(external_model), "--tokenizer", str(tokenizer_path), "--text", str(text_path),
                  "--calibration", str(calib), "--out-dir", str(out), "--configs", "gptq-w4", "--seqlen", "8",
                  "--pass-options", f"{option}={target}")
    what = {
        "model": f"the model {target}",
        "archive": f"the parameter archive of {external_model}, {target}",
        "output": f"output {target}",
    }[collides_with]
    assert_one_line_error(result, f"{option}={target} is the same file as {what}")
    assert _snapshot(tmp_path) == before


# --- devices and pipes ------------------------------------------------------


@pytest.mark.parametrize("external", [False, True])
def test_link_to_dev_null_stays_a_link(llama2c_folder, external):
    """-o a link to /dev/null (never /dev/null itself, so that a regression
    replaces the link, not the device): written through, the link kept."""
    null = llama2c_folder / "null"
    null.symlink_to("/dev/null")
    result = _run("import-llama2c", str(llama2c_folder / "ck.bin"), "-o", str(null),
                  *(["--external-weights"] if external else []))
    assert result.returncode == 0, result.stderr
    assert null.is_symlink() and os.readlink(null) == "/dev/null"
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    expected = ["ck.bin", "null"] + (["null.weights.npz"] if external else [])
    assert sorted(p.name for p in llama2c_folder.iterdir()) == expected


def test_fifo_is_written_in_place(llama2c_folder):
    fifo = llama2c_folder / "model.mlir"
    os.mkfifo(fifo)
    received = []
    # A daemon: should the FIFO be replaced, its reader waits for ever.
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = _run("import-llama2c", str(llama2c_folder / "ck.bin"), "-o", str(fifo), "--external-weights")
    reader.join(timeout=60)
    assert result.returncode == 0, result.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert received and received[0].startswith(b"module attributes {gptq.model")
    assert b'gptq.parameters = "model.weights.npz"' in received[0]
    assert (llama2c_folder / "model.weights.npz").is_file()


# --- signals ----------------------------------------------------------------


@pytest.fixture(scope="module")
def large_checkpoint(tmp_path_factory) -> Path:
    """A 47 MB checkpoint: importing it writes 95 MB for about 0.3 s, long
    enough to be interrupted halfway."""
    ckpt = synthetic_checkpoint(dim=512, hidden_dim=1376, n_layers=4, n_heads=8, n_kv_heads=4, vocab_size=512,
                                seq_len=64)
    return write_checkpoint(tmp_path_factory.mktemp("large") / "large.bin", ckpt, 0)


def _wait_for_temporary(process: subprocess.Popen, folder: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not _temporaries(folder):
        assert process.poll() is None, f"ended before writing anything: {process.stderr.read()}"
        assert time.monotonic() < deadline, "no temporary file appeared"
        time.sleep(0.002)


@pytest.mark.parametrize(
    "signum, status, message",
    [(signal.SIGTERM, 143, "terminated (SIGTERM)"), (signal.SIGINT, 130, "interrupted")],
)
def test_signal_during_import_leaves_no_temporary(large_checkpoint, tmp_path, signum, status, message):
    output = tmp_path / "s.mlir"
    output.write_text("old")
    before = _snapshot(tmp_path)
    process = _start("import-llama2c", str(large_checkpoint), "-o", str(output))
    try:
        _wait_for_temporary(process, tmp_path)
        process.send_signal(signum)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == status, err
    assert err.splitlines() == [f"gptq_mlir: error: {message}"]
    assert _temporaries(tmp_path) == []
    assert _snapshot(tmp_path) == before


_ENDED = {signal.SIGINT: (130, "interrupted"), signal.SIGTERM: (143, "terminated (SIGTERM)")}


@pytest.mark.parametrize("signum", list(_ENDED))
@pytest.mark.parametrize("becomes", ["RuntimeError", "swallowed"])
def test_signal_whatever_its_exception_became(monkeypatch, capsys, tmp_path, signum, becomes):
    """An extension module that calls back into Python turns the exception
    a signal's handler raises into another (torch's import: "RuntimeError:
    KeyboardInterrupt: <EMPTY MESSAGE>"), or swallows it: the command
    still ends with the signal's line and status."""

    def command(args):
        try:
            signal.raise_signal(signum)
        except BaseException as error:
            if becomes == "RuntimeError":
                raise RuntimeError(f"{type(error).__name__}: {error or '<EMPTY MESSAGE>'}") from None

    monkeypatch.setattr(commands, "_import_hf", command)
    status, message = _ENDED[signum]
    assert commands.main(["import-hf", str(tmp_path), "-o", str(tmp_path / "m.mlir")]) == status
    assert capsys.readouterr().err == f"gptq_mlir: error: {message}\n"


def test_torch_runs_with_the_signals_held(monkeypatch):
    """A signal while torch computes the rotary frequencies raises once
    torch is done: raised inside a torch call (which runs Python code from
    C++), it became an uncaught C++ exception that aborted the import and
    left its temporaries."""
    from gptq_mlir import signals
    from gptq_mlir.importers import architectures

    finished = []

    def computing(*args):
        signal.raise_signal(signal.SIGINT)
        finished.append(args)
        return np.ones(2, np.float32)

    monkeypatch.setattr(architectures, "_rope_frequencies", computing)
    with signals.raising(), pytest.raises(KeyboardInterrupt):
        architectures.rope_frequencies(10000.0, 4, None)
    assert finished == [(10000.0, 4, None)]


@pytest.fixture(scope="module")
def small_folders(tmp_path_factory) -> Dict[str, Path]:
    """A Hugging Face and a GPTQ checkpoint of a tiny model."""
    from hf_convert import write_gptq_checkpoint

    root = tmp_path_factory.mktemp("small")
    tiny = synthetic_checkpoint()
    return {"import-hf": write_hf_checkpoint(tiny, root / "hf"), "import-gptq": write_gptq_checkpoint(tiny, root / "gptq")}


def _mapped(pid: int, library: str) -> bool:
    try:
        return library in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


@pytest.mark.parametrize("signum", list(_ENDED))
@pytest.mark.parametrize(
    "command, library",
    [("import-hf", "_multiarray_umath"), ("import-hf", "libtorch_cpu"), ("import-gptq", "libtorch_cpu")],
)
def test_signal_while_extensions_load(small_folders, tmp_path, signum, command, library):
    """SIGINT and SIGTERM while NumPy's extension loads (the package's
    imports, before any command runs) and while torch's does (inside the
    import, whose rotary frequencies torch computes; its initialization
    turns the exception into a RuntimeError): one line and 130 or 143,
    the old output kept. Sent as soon as the library is mapped."""
    if not os.path.exists(f"/proc/{os.getpid()}/maps"):
        pytest.skip("needs /proc/PID/maps")
    output = tmp_path / "m.mlir"
    output.write_text("old")
    process = _start(command, str(small_folders[command]), "-o", str(output))
    try:
        deadline = time.monotonic() + 60
        while not _mapped(process.pid, library):
            assert process.poll() is None, f"ended before loading {library}: {process.stderr.read()}"
            assert time.monotonic() < deadline, f"{library} never loaded"
            time.sleep(0.001)
        process.send_signal(signum)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    status, message = _ENDED[signum]
    assert (process.returncode, err.splitlines()) == (status, [f"gptq_mlir: error: {message}"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.mlir"] and output.read_text() == "old"


def test_sighup_while_a_pipe_blocks_the_commit(llama2c_folder):
    """The module goes to a FIFO nobody reads, so the commit blocks with the
    weights staged beside it and the module in a scratch folder (in
    $TMPDIR, here the same folder): SIGHUP removes both."""
    fifo = llama2c_folder / "model.mlir"
    os.mkfifo(fifo)
    before = _snapshot(llama2c_folder)
    process = _start("import-llama2c", str(llama2c_folder / "ck.bin"), "-o", str(fifo), "--external-weights",
                     env={"TMPDIR": str(llama2c_folder)})
    try:
        deadline = time.monotonic() + 60
        # Both temporaries exist once the module is written and the commit waits.
        while not any(p.suffix == ".out" for p in llama2c_folder.rglob("*")):
            assert process.poll() is None, process.stderr.read()
            assert time.monotonic() < deadline, "the commit never started"
            time.sleep(0.01)
        time.sleep(0.2)
        process.send_signal(signal.SIGHUP)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 128 + signal.SIGHUP, err
    assert err.splitlines() == ["gptq_mlir: error: terminated (SIGHUP)"]
    assert _temporaries(llama2c_folder) == []
    assert _snapshot(llama2c_folder) == before


def test_parameter_archives_of_a_model(tmp_path):
    """The archives a module names (so that a command can protect them),
    read through the C API: one, several, an index with its shards; nothing
    for a pipe (refused without waiting for a writer), a file that does not
    parse (here a cut-off bytecode header), or a module that names none."""
    from gptq_mlir.runtime.archives import parameter_archives

    text = tmp_path / "m.mlir"
    text.write_text('#map = affine_map<(d0) -> (d0)>\n'
                    'module attributes {gptq.parameters = "w\\22x.npz"} {\n}\n')
    assert parameter_archives(text) == [tmp_path / 'w"x.npz']
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "model.safetensors.index.json").write_text(
        '{"weight_map": {"a": "one.safetensors", "b": "two.safetensors", "c": "one.safetensors"}}')
    several = tmp_path / "several.mlir"
    several.write_text('module attributes {gptq.parameters = ["ckpt/model.safetensors.index.json", "q.safetensors"]} {\n}\n')
    assert parameter_archives(several) == [
        tmp_path / "ckpt" / "model.safetensors.index.json", tmp_path / "ckpt" / "one.safetensors",
        tmp_path / "ckpt" / "two.safetensors", tmp_path / "q.safetensors",
    ]
    (tmp_path / "none.mlir").write_text("module {\n}\n")
    (tmp_path / "b.mlirbc").write_bytes(b"ML\xefR\x00gptq.parameters = \"w.npz\"")
    for name in ["none.mlir", "b.mlirbc", "missing.mlir"]:
        assert parameter_archives(tmp_path / name) == [], name
    os.mkfifo(tmp_path / "fifo.mlir")
    found = []
    # In a daemon thread, so that a regression fails the test instead of
    # hanging the suite.
    reader = threading.Thread(target=lambda: found.append(parameter_archives(tmp_path / "fifo.mlir")), daemon=True)
    reader.start()
    reader.join(timeout=30)
    assert found == [[]]


# --- concurrent runs --------------------------------------------------------


@pytest.mark.parametrize("held", ["a", "b"])
def test_commit_holds_the_lock_of_every_output_folder(tmp_path, held):
    """A run renames its outputs into place holding an exclusive flock on
    each of their folders, all taken before the first rename (the C++
    tools lock the same way): while another run holds the lock of either
    folder, no output of the set appears in either; once it is released,
    all do. So two runs writing the same outputs rename their sets in
    turn, never one run's model beside the other's report."""
    import fcntl

    from gptq_mlir.files.outputs import Run

    folders = {name: tmp_path / name for name in "ab"}
    for folder in folders.values():
        folder.mkdir()
    outputs = [folders["a"] / "m.mlir", folders["b"] / "r.json"]
    run = Run()
    for output in outputs:
        run.output(output)
    run.begin()
    for output in outputs:
        run.path(output).write_text("new")
    lock = os.open(folders[held], os.O_RDONLY)
    committing = threading.Thread(target=run.commit)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        committing.start()
        time.sleep(0.3)
        assert [output.exists() for output in outputs] == [False, False]
    finally:
        os.close(lock)
    committing.join(timeout=60)
    assert [output.read_text() for output in outputs] == ["new", "new"]
    assert _temporaries(tmp_path) == []


@pytest.mark.parametrize("case", ["one not written", "one replaced meanwhile"])
def test_commit_checks_every_output_is_the_one_written(tmp_path, monkeypatch, case):
    """No run ends well without writing what it declared: a declared output
    that was never written refuses the commit before anything is renamed,
    and an output that is not the run's file once the set is in place
    (another program, which takes no lock, renamed its own over it) is an
    error naming it."""
    from gptq_mlir.errors import GPTQError
    from gptq_mlir.files.outputs import Run

    outputs = [tmp_path / "m.mlir", tmp_path / "r.json"]
    run = Run()
    for output in outputs:
        run.output(output)
    run.begin()
    run.path(outputs[0]).write_text("new")
    if case == "one not written":
        expected = f"output {outputs[1]} was not written"
    else:
        run.path(outputs[1]).write_text("new")
        replace = os.replace

        def replace_then_overwritten(source, target):
            replace(source, target)
            if Path(target) == outputs[1]:
                (tmp_path / "theirs").write_text("theirs")
                replace(tmp_path / "theirs", target)

        monkeypatch.setattr(os, "replace", replace_then_overwritten)
        expected = f"output {outputs[1]} was replaced by another program while it was written"
    with pytest.raises(GPTQError, match=re.escape(expected)):
        with run:
            pass
    if case == "one not written":
        assert [output.exists() for output in outputs] == [False, False]
    assert _temporaries(tmp_path) == []
