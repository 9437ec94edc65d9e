"""File helpers shared by the commands: reading binary inputs with clear
errors, and atomic writes, so no partial output."""

import contextlib
import os
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable, Iterator, TypeVar, Union

import numpy as np

from .errors import GPTQError

PathLike = Union[str, os.PathLike]
T = TypeVar("T")


def read_and_parse(path: PathLike, what: str, parse: Callable[[bytes], T]) -> T:
    """Read the file at ``path`` and ``parse`` its bytes.

    An unreadable file and a parse error both become a GPTQError that names
    the file (``what`` says what it should have been, e.g. "checkpoint").
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise GPTQError(f"cannot read {what} {path}: {error.strerror}") from error
    try:
        return parse(data)
    except GPTQError as error:
        raise GPTQError(f"{path}: {error}") from None


@contextlib.contextmanager
def atomic_output(path: PathLike) -> Iterator[BinaryIO]:
    """Open a temporary file next to ``path``; rename it over ``path`` on success.

    If the body raises, the temporary file is removed and ``path`` is left
    untouched, so a failed command never leaves a partial output file.
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp_name = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=".tmp", dir=directory
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise


def save_npy(path: PathLike, array: np.ndarray) -> None:
    """Write ``array`` as a .npy file atomically."""
    with atomic_output(path) as handle:
        np.save(handle, array, allow_pickle=False)
