"""File helpers shared by the commands: reading binary inputs with clear
errors, and atomic writes, so no partial output."""

import contextlib
import io
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable, Iterator, Optional, Tuple, TypeVar, Union

import numpy as np

from .errors import GPTQError

PathLike = Union[str, os.PathLike]
T = TypeVar("T")


#: Checks a file's first bytes against its size: (how many bytes it needs,
#: a function of those bytes and the file's size, None when unknown, that
#: raises GPTQError or returns the most bytes the file may hold).
HeaderCheck = Tuple[int, Callable[[bytes, Optional[int]], int]]


def read_and_parse(
    path: PathLike, what: str, parse: Callable[[bytes], T], header: Optional[HeaderCheck] = None
) -> T:
    """Read the file at ``path`` and ``parse`` its bytes.

    With ``header = (n, check)``, the first ``n`` bytes (all of the file when
    shorter) and the file's size go to ``check`` before the rest is read, so
    a header that disagrees with the size is refused before anything is
    allocated for it. Of a pipe or device, whose size is unknown, at most as
    many bytes as ``check`` allows are read. An unreadable file and a parse
    error both become a GPTQError that names the file (``what`` says what it
    should have been, e.g. "checkpoint").
    """
    try:
        with open(path, "rb") as handle:
            if header is None:
                data = handle.read()
            else:
                status = os.fstat(handle.fileno())
                regular = stat.S_ISREG(status.st_mode)
                head = handle.read(header[0])
                try:
                    limit = header[1](head, status.st_size if regular else None)
                except GPTQError as error:
                    raise GPTQError(f"{path}: {error}") from None
                if regular:
                    handle.seek(0)
                    data = handle.read()
                else:
                    data = head + handle.read(max(limit - len(head), 0) + 1)
                    if len(data) > limit:
                        raise GPTQError(f"{path}: longer than the {limit} bytes its header allows")
    except OSError as error:
        raise GPTQError(f"cannot read {what} {path}: {error.strerror or error}") from error
    try:
        return parse(data)
    except GPTQError as error:
        raise GPTQError(f"{path}: {error}") from None


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


@contextlib.contextmanager
def atomic_output(path: PathLike) -> Iterator[BinaryIO]:
    """Open a temporary file next to ``path``; rename it over ``path`` on success.

    If the body raises, the temporary file is removed and ``path`` is left
    untouched, so a failed command never leaves a partial output file. The
    file gets the permissions a plain ``open`` would give it (the umask's, or
    those of the file it replaces), not the temporary file's 0600. A failure
    to create, write or rename it (a missing or read-only folder, a full
    disk) is a GPTQError naming ``path``.
    """
    path = Path(path)
    # A device or a pipe (/dev/null, a FIFO) is written as it is: renaming a
    # file onto it would replace the device itself.
    try:
        special = not stat.S_ISREG(os.stat(path).st_mode) and not path.is_dir()
    except OSError:
        special = False
    if special:
        # Held in memory first: writers such as np.save need a seekable file.
        buffer = io.BytesIO()
        yield buffer
        try:
            with open(path, "wb") as handle:
                handle.write(buffer.getbuffer())
        except OSError as error:
            raise GPTQError(f"cannot write {path}: {error.strerror or error}") from error
        return
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as error:
        raise GPTQError(f"cannot write {path}: {error.strerror or error}") from error
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), _new_file_mode(path))
            yield handle
        os.replace(tmp_name, path)
    except BaseException as error:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        if isinstance(error, OSError):
            raise GPTQError(f"cannot write {path}: {error.strerror or error}") from error
        raise


def save_npy(path: PathLike, array: np.ndarray) -> None:
    """Write ``array`` as a .npy file atomically."""
    with atomic_output(path) as handle:
        np.save(handle, array, allow_pickle=False)


class StagedOutputs:
    """Several output files of one command, renamed into place together.

    The files are written into a hidden folder made inside ``directory``
    (which is created when missing; a name that exists and is not a folder,
    or an empty name, is an error) and renamed over their final names by
    :meth:`commit`, after all of them are written; each gets the permissions
    a plain ``open`` would give it. :meth:`discard`, which leaving a ``with``
    block without a commit calls, removes the hidden folder and, if this
    object created ``directory`` and it is empty, ``directory`` too: a failed
    command leaves the old files (or none) and no mixture. Files of other
    names in ``directory`` are never touched.
    """

    def __init__(self, directory: PathLike):
        if not str(directory):
            raise GPTQError("the output folder's name is empty")
        self.directory = Path(directory)
        self._created = False
        if not self.directory.is_dir():
            if os.path.lexists(self.directory):
                raise GPTQError(f"output folder {self.directory} exists and is not a folder")
            try:
                self.directory.mkdir(parents=True)
            except OSError as error:
                raise GPTQError(f"cannot create {self.directory}: {error.strerror or error}") from error
            self._created = True
        try:
            self.staging = Path(tempfile.mkdtemp(prefix=".staging.", suffix=".tmp", dir=self.directory))
        except OSError as error:
            self._remove_created()
            raise GPTQError(f"cannot write in {self.directory}: {error.strerror or error}") from error
        self._names: list = []
        self._committed = False

    def path(self, name: str) -> Path:
        """Where to write the output that will be ``directory/name``."""
        if name not in self._names:
            self._names.append(name)
        return self.staging / name

    def final(self, name: str) -> Path:
        """The final name of output ``name``."""
        return self.directory / name

    def commit(self) -> None:
        """Rename every output written into place; GPTQError if one is missing."""
        for name in self._names:
            if not (self.staging / name).is_file():
                raise GPTQError(f"output {self.final(name)} was not written")
        try:
            for name in self._names:
                os.chmod(self.staging / name, _new_file_mode(self.final(name)))
                os.replace(self.staging / name, self.final(name))
            self.staging.rmdir()
            self._committed = True
        except OSError as error:
            where = error.filename or self.directory
            raise GPTQError(f"cannot write {where}: {error.strerror or error}") from error

    def discard(self) -> None:
        """Remove what was written, and ``directory`` if this made it and it is empty."""
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
