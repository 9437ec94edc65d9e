"""The one way the commands write outputs (:class:`Run`): checked against the
inputs before any work, written to temporaries and renamed into place
together at the end, so no partial output and no input replaced."""

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO, Dict, Iterable, Iterator, List, Optional, Tuple, Union

import numpy as np

from .. import signals
from ..errors import GPTQError

PathLike = Union[str, os.PathLike]


def _new_file_mode(path: Path) -> int:
    """The permissions ``open(path, "w")`` would leave: an existing file's
    own, else 0666 less the umask."""
    try:
        existing = os.stat(path)
        if stat.S_ISREG(existing.st_mode):
            return stat.S_IMODE(existing.st_mode)
    except OSError:
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


# Temporaries are made, renamed and removed with the ending signals held
# back, so that none is left half made or unknown.
_signals_held = signals.held


def _file_identity(status: os.stat_result) -> Tuple[int, int]:
    return status.st_dev, status.st_ino


@contextlib.contextmanager
def directory_locks(directories: Iterable[PathLike]) -> Iterator[None]:
    """Exclusive ``flock`` locks on ``directories`` for the body, each taken
    on a read-only descriptor of the folder, in the order of their device
    and inode, so that two runs cannot deadlock. The outputs of a run are
    renamed into their folders holding these: two runs that write outputs
    of the same names (any of the Python commands, and the C++ tools, which
    lock the same way) rename their sets in turn, and never leave one
    run's model beside another's report. A folder that cannot be opened is
    left unlocked; its renames fail or succeed alone."""
    held: Dict[Tuple[int, int], int] = {}
    try:
        for directory in directories:
            try:
                fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            except OSError:
                continue
            key = _file_identity(os.fstat(fd))
            if key in held:
                os.close(fd)
            else:
                held[key] = fd
        for key in sorted(held):
            fcntl.flock(held[key], fcntl.LOCK_EX)
        yield
    finally:
        # Closing the descriptor releases its lock.
        for fd in held.values():
            os.close(fd)


def _strerror(error: OSError) -> str:
    return error.strerror or str(error)


class StagedOutputs:
    """Several output files in one folder, renamed into place together.

    The files are written into a hidden folder made inside ``directory``
    (which is created when missing; a name that exists and is not a folder,
    or an empty name, is an error) and renamed over their final names by
    :meth:`commit`, after all of them are written; each gets the permissions
    a plain ``open`` would give it. :meth:`discard`, which leaving a ``with``
    block without a commit calls, removes the hidden folder and, if this
    object created ``directory`` and it is empty, ``directory`` too: a failed
    command leaves the old files (or none) and no mixture. Files of other
    names in ``directory`` are never touched. Errors name ``label`` (default:
    ``directory``). :class:`Run` stages every output through these.
    """

    def __init__(self, directory: PathLike, label: Optional[str] = None):
        if not str(directory):
            raise GPTQError("the output folder's name is empty")
        self.directory = Path(directory)
        self._created = False
        self._names: List[str] = []
        self._committed = False
        with _signals_held():
            if not self.directory.is_dir():
                if os.path.lexists(self.directory):
                    raise GPTQError(f"output folder {self.directory} exists and is not a folder")
                try:
                    self.directory.mkdir(parents=True)
                except OSError as error:
                    raise GPTQError(f"cannot create {self.directory}: {_strerror(error)}") from error
                self._created = True
            try:
                self.staging = Path(tempfile.mkdtemp(prefix=".staging.", suffix=".tmp", dir=self.directory))
            except OSError as error:
                self._remove_created()
                where = label or f"in {self.directory}"
                raise GPTQError(f"cannot write {where}: {_strerror(error)}") from error

    def path(self, name: str) -> Path:
        """Where to write the output that will be ``directory/name``."""
        if name not in self._names:
            self._names.append(name)
        return self.staging / name

    def final(self, name: str) -> Path:
        """The final name of output ``name``."""
        return self.directory / name

    def check(self) -> None:
        """GPTQError unless every output asked for was written."""
        for name in self._names:
            if not (self.staging / name).is_file():
                raise GPTQError(f"output {self.final(name)} was not written")

    def commit(self) -> None:
        """Rename every output written into place, holding the folder's
        lock (:func:`directory_locks`); GPTQError if one is missing."""
        with _signals_held(), directory_locks([self.directory]):
            self.rename()

    def rename(self) -> None:
        """:meth:`commit` without taking the lock (the caller holds it, and
        holds the signals back); GPTQError if an output is missing, or is
        not the file written once all are renamed (another program that
        does not take the lock replaced it meanwhile)."""
        self.check()
        where = self.directory
        written = {}
        try:
            for name in self._names:
                where = self.final(name)
                os.chmod(self.staging / name, _new_file_mode(where))
                written[name] = _file_identity(os.stat(self.staging / name))
                os.replace(self.staging / name, where)
            where = self.directory
            self.staging.rmdir()
            self._committed = True
            for name, identity in written.items():
                where = self.final(name)
                if _file_identity(os.lstat(where)) != identity:
                    raise GPTQError(f"output {where} was replaced by another program while it was written")
        except OSError as error:
            raise GPTQError(f"cannot write {where}: {_strerror(error)}") from error

    def discard(self) -> None:
        """Remove what was written, and ``directory`` if this made it and it is empty."""
        with _signals_held():
            shutil.rmtree(self.staging, ignore_errors=True)
            self._remove_created()

    def _remove_created(self) -> None:
        if self._created:
            with contextlib.suppress(OSError):
                self.directory.rmdir()

    def __enter__(self) -> "StagedOutputs":
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if not self._committed:
            self.discard()


def _identity(path: Path) -> Optional[tuple]:
    """What makes two names the same file: an existing file's device and
    inode (through links and whatever the spelling), else the resolved name
    (the real path of the folder plus the name). None for what exists but
    is not a regular file (a device, a pipe, a folder), which no output
    replaces, and for what cannot be looked at."""
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return ("name", os.path.realpath(path))
    except OSError:
        return None
    if not stat.S_ISREG(status.st_mode):
        return None
    return ("file", status.st_dev, status.st_ino)


def _key(path: PathLike) -> str:
    """An output's name as :class:`Run` finds it again, whatever the spelling
    it was declared and asked for with (``./a`` and ``a``)."""
    return str(Path(path))


class _Output:
    def __init__(self, final: str, label: str, folder: Optional[Path]):
        self.final = final
        self.label = label
        # The output folder it belongs to, created when missing; None for a
        # file named by itself, whose folder must exist.
        self.folder = folder
        self.target: Optional[Path] = None
        self.device = False


class Run:
    """Every file one command reads and writes.

    Declare the inputs (:meth:`input`) and the outputs (:meth:`output`,
    :meth:`output_folder`), then :meth:`begin`, before any work: it refuses,
    in one GPTQError naming both, an output that is one of the inputs or
    another output (compared as files: device and inode for those that
    exist, so through links, hard links and any spelling; the real path of
    the folder plus the name for those that do not), an output that is a
    folder, and an output whose folder does not exist or cannot be written.
    Then each output is written to the temporary file :meth:`path` gives
    (in a hidden ``.staging.*.tmp`` folder beside it) and :meth:`commit`
    renames them all into place after all of them are written, with the
    permissions a plain ``open`` gives. Leaving a ``with`` block normally
    commits; leaving it by an exception (a GPTQError, Ctrl-C, the
    :class:`~gptq_mlir.errors.Terminated` of SIGTERM) removes every
    temporary and commits nothing, so a failed command leaves every file
    as it was.

    An output that is a device or a pipe (``/dev/null``, a FIFO, a link to
    one) is written in place at the commit, never renamed over; its
    temporary lies in a private scratch folder.
    """

    def __init__(self) -> None:
        self._inputs: List[Tuple[str, Path]] = []
        self._outputs: List[_Output] = []
        self._by_name: Dict[str, _Output] = {}
        self._staged: Dict[Path, StagedOutputs] = {}
        self._scratch: Optional[Path] = None
        self._begun = False
        self._committed = False

    def input(self, path: Optional[PathLike], what: str = "input") -> None:
        """``path`` is read by the command (``what`` names it in errors,
        e.g. "checkpoint"); None is ignored."""
        if path is not None:
            self._inputs.append((what, Path(path)))

    def output(self, path: PathLike, label: Optional[str] = None) -> None:
        """``path`` is written by the command; ``label`` names it in errors
        (default ``output PATH``)."""
        self._add_output(path, label, None)

    def output_folder(self, folder: PathLike, names: List[str], label: str = "output") -> None:
        """The files ``names`` in ``folder`` are written by the command; the
        folder is created when missing (and removed again by a failure)."""
        if not str(folder):
            raise GPTQError("the output folder's name is empty")
        for name in names:
            self._add_output(Path(folder) / name, f"{label} {Path(folder) / name}", Path(folder))

    def _add_output(self, path: PathLike, label: Optional[str], folder: Optional[Path]) -> None:
        if self._begun:
            raise GPTQError(f"internal error: output {path} declared after the run began")
        final = os.fspath(path)
        if not final:
            raise GPTQError(f"the name of {label or 'an output'} is empty")
        output = _Output(final, label or f"output {final}", folder)
        self._outputs.append(output)
        # A name given twice is refused by check(), as the same file.
        self._by_name.setdefault(_key(final), output)

    def begin(self) -> None:
        """:meth:`check`, then make the outputs' temporaries."""
        if self._begun:
            return
        self.check()
        self._begun = True
        try:
            self._stage()
        except BaseException:
            self.discard()
            raise

    def check(self) -> None:
        """GPTQError, before anything is written, for an output that is an
        input or another output, or that is a folder."""
        inputs: Dict[tuple, Tuple[str, Path]] = {}
        for what, path in self._inputs:
            if path.exists():
                key = _identity(path)
                if key is not None:
                    inputs.setdefault(key, (what, path))
        outputs: Dict[tuple, _Output] = {}
        for output in self._outputs:
            path = Path(output.final)
            if output.folder is not None and output.folder.exists() and not output.folder.is_dir():
                raise GPTQError(f"output folder {output.folder} exists and is not a folder")
            if path.is_dir():
                raise GPTQError(f"cannot write {path}: it is a folder")
            try:
                output.device = path.exists() and not stat.S_ISREG(os.stat(path).st_mode)
            except OSError:
                output.device = False
            key = _identity(path)
            if key is None:
                # A device or a pipe: only the same name twice is refused.
                key = ("name", os.path.realpath(path))
            elif key in inputs:
                what, source = inputs[key]
                raise GPTQError(f"{output.label} is the same file as the {what} {source}")
            if key in outputs:
                raise GPTQError(f"{output.label} is the same file as {outputs[key].label}")
            outputs[key] = output

    def _stage(self) -> None:
        for output in self._outputs:
            path = Path(output.final)
            with _signals_held():
                if output.device:
                    if self._scratch is None:
                        self._scratch = Path(tempfile.mkdtemp(prefix="gptq-mlir-"))
                    output.target = self._scratch / f"{len(os.listdir(self._scratch))}.out"
                    continue
                parent = path.parent
                if output.folder is None and not parent.is_dir():
                    raise GPTQError(f"cannot write {path}: no folder {parent}")
                staged = self._staged.get(parent)
                if staged is None:
                    staged = StagedOutputs(parent, label=str(path))
                    self._staged[parent] = staged
                output.target = staged.path(path.name)

    def path(self, final: PathLike) -> Path:
        """The temporary file to write for the output ``final`` (as declared)."""
        if not self._begun:
            self.begin()
        output = self._by_name.get(_key(final))
        if output is None or output.target is None:
            raise GPTQError(f"internal error: {final} is not an output of this run")
        return output.target

    @contextlib.contextmanager
    def open(self, final: PathLike) -> Iterator[BinaryIO]:
        """The temporary file of output ``final``, open for writing; an
        OSError meanwhile (a full disk) is a GPTQError naming ``final``."""
        try:
            with open(self.path(final), "wb") as handle:
                yield handle
        except OSError as error:
            raise GPTQError(f"cannot write {final}: {_strerror(error)}") from error

    def commit(self) -> None:
        """Put every output in place: devices written first, then every
        file renamed; GPTQError (and nothing renamed) if one is missing."""
        if not self._begun:
            self.begin()
        for output in self._outputs:
            if output.target is None or not output.target.is_file():
                raise GPTQError(f"output {output.final} was not written")
        for output in self._outputs:
            if output.device:
                # Not with signals held: a pipe without a reader blocks.
                try:
                    with open(output.target, "rb") as source, open(output.final, "wb") as sink:
                        shutil.copyfileobj(source, sink)
                except OSError as error:
                    raise GPTQError(f"cannot write {output.final}: {_strerror(error)}") from error
        with _signals_held():
            with directory_locks(staged.directory for staged in self._staged.values()):
                for staged in self._staged.values():
                    staged.rename()
                self._committed = True
            self._remove_scratch()

    def discard(self) -> None:
        """Remove every temporary; no output is put in place."""
        with _signals_held():
            for staged in self._staged.values():
                staged.discard()
            self._remove_scratch()

    def _remove_scratch(self) -> None:
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if kind is None and not self._committed:
            try:
                self.commit()
            except BaseException:
                self.discard()
                raise
        elif not self._committed:
            self.discard()


@contextlib.contextmanager
def atomic_output(path: PathLike) -> Iterator[BinaryIO]:
    """Open a temporary file for the output ``path``; put it in place on success.

    A :class:`Run` of one output: if the body raises, the temporary file is
    removed and ``path`` is left untouched; a device or a pipe is written
    in place. A failure to create, write or rename it (a missing or
    read-only folder, a full disk) is a GPTQError naming ``path``.
    """
    with Run() as run:
        run.output(path)
        with run.open(path) as handle:
            yield handle


def save_npy(path: PathLike, array: np.ndarray) -> None:
    """Write ``array`` as a .npy file atomically."""
    with atomic_output(path) as handle:
        np.save(handle, array, allow_pickle=False)
