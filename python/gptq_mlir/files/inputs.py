"""Building blocks of the readers of untrusted input files.

:func:`read_and_parse` reads a whole file and parses it, with the file's
name in every error. Every file a reader opens goes through :func:`open_regular`: a FIFO, a
device, a socket or a folder (after following links) is refused before it
is opened for reading, since a FIFO would block for ever and a device such
as ``/dev/zero`` would never end. Sizes come from the file, never from its
contents alone: a JSON file may hold at most :data:`MAX_JSON_BYTES`, a
safetensors header at most :data:`MAX_SAFETENSORS_HEADER_BYTES` and no more
than the file, and every tensor must lie inside the file's data.

:func:`parse_json` is the one JSON parser of the package's inputs
(``config.json``, ``quantize_config.json``, the shard index, safetensors
headers, a module's ``gptq.hf_config``): nesting deeper than
:data:`MAX_JSON_DEPTH` is refused before Python's parser recurses into it,
and so are ``NaN``/``Infinity`` (not JSON), numbers out of float range or
of more than :data:`MAX_NUMBER_CHARS` characters, keys given twice and
escapes of unpaired surrogates (text that cannot be printed or written).

Every failure is a :class:`GPTQError` whose message names the file.
"""

import dataclasses
import json
import math
import os
import re
import stat
import zipfile
import zlib
from pathlib import Path
from typing import Any, BinaryIO, Callable, Dict, List, Optional, Tuple, TypeVar, Union

import numpy as np

from ..errors import GPTQError

PathLike = Union[str, os.PathLike]
T = TypeVar("T")

#: The largest JSON file a reader accepts (a Llama config.json is about
#: 1 KB; the index of a 400-billion-parameter model's shards about 100 KB).
MAX_JSON_BYTES = 64 << 20
#: The deepest nesting of arrays and objects in a JSON input (a config.json
#: nests 3 deep).
MAX_JSON_DEPTH = 64
#: The longest number literal in a JSON input: an int64 has 19 digits, a
#: float17 significant digits and an exponent.
MAX_NUMBER_CHARS = 40
#: The largest safetensors header (the safetensors package's own limit).
MAX_SAFETENSORS_HEADER_BYTES = 100_000_000
#: Bytes per element of each safetensors dtype a header may name.
SAFETENSORS_DTYPE_BYTES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1,
    "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4,
    "I64": 8, "U64": 8, "F64": 8,
}
#: numpy's dtype for the safetensors dtypes the readers return as arrays
#: (BF16 is read as its bits and widened to float32).
NUMPY_DTYPES = {"F32": "<f4", "F16": "<f2", "BF16": "<u2", "I32": "<i4", "I64": "<i8", "U8": "u1", "I8": "i1"}

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


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


def shown(text: str, limit: int = 200) -> str:
    """``text`` as it may appear in a one-line message: as it is when it is
    printable, else Python's ascii() of it; cut to ``limit`` characters."""
    if not text.isprintable():
        text = ascii(text)
    return text if len(text) <= limit else text[:limit] + "..."


def describe(value: Any, limit: int = 80) -> str:
    """A JSON value from an input as a short, one-line piece of a message."""
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError):
        text = ascii(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: PathLike, what: str) -> BinaryIO:
    """Open ``path`` for reading, refusing anything but a regular file.

    The file's type is checked (through links) before it is opened, then
    again on the open descriptor, which is opened without blocking so that a
    FIFO swapped in between cannot hold the reader."""
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            raise GPTQError(f"{path}: {what} is {_kind(mode)}, expected a regular file")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise GPTQError(f"cannot read {what} {path}: {error.strerror or error}") from error
    except ValueError as error:  # a NUL in the name
        raise GPTQError(f"cannot read {what} {shown(str(path))}: {error}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise GPTQError(f"{path}: {what} is {_kind(mode)}, expected a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_exactly(handle: BinaryIO, count: int, offset: int, path: PathLike, what: str) -> bytearray:
    """``count`` bytes at ``offset`` of the open file; GPTQError naming the
    file when it ends sooner (it was cut short while being read)."""
    buffer = bytearray(count)
    view = memoryview(buffer)
    try:
        handle.seek(offset)
        done = 0
        while done < count:
            got = handle.readinto(view[done:])
            if not got:
                raise GPTQError(f"{path}: {what} ends at byte {offset + done}, expected {offset + count} bytes")
            done += got
    except OSError as error:
        raise GPTQError(f"cannot read {what} {path}: {error.strerror or error}") from error
    return buffer


def read_regular(path: PathLike, what: str, limit: int) -> bytes:
    """All of the regular file ``path``, refused when it holds more than
    ``limit`` bytes (before anything is read)."""
    with open_regular(path, what) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > limit:
            raise GPTQError(f"{path}: {what} of {size} bytes, larger than the {limit} bytes this reader accepts")
        data = bytes(read_exactly(handle, size, 0, path, what))
        try:
            if handle.read(1):
                raise GPTQError(f"{path}: {what} grew while it was read")
        except OSError as error:
            raise GPTQError(f"cannot read {what} {path}: {error.strerror or error}") from error
        return data


# JSON ---------------------------------------------------------------------------

_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
#: Each byte's change of the nesting level: +1 for [ and {, -1 for ] and }.
_STEPS = np.zeros(256, dtype=np.int64)
_STEPS[list(b"[{")] = 1
_STEPS[list(b"]}")] = -1
_CHUNK = 1 << 20


def json_depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects in the JSON text ``data``,
    computed without recursion: strings removed, then a running count of
    the brackets left (for malformed text, an estimate; the parser refuses
    that text anyway)."""
    brackets = _JSON_STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    deepest, level = 0, 0
    for start in range(0, len(brackets), _CHUNK):
        codes = np.frombuffer(brackets, dtype=np.uint8, count=min(_CHUNK, len(brackets) - start), offset=start)
        levels = np.cumsum(_STEPS[codes]) + level
        deepest, level = max(deepest, int(levels.max())), int(levels[-1])
    return deepest


def _number(text: str) -> str:
    if len(text) > MAX_NUMBER_CHARS:
        raise GPTQError(f"a number of {len(text)} characters, more than {MAX_NUMBER_CHARS}: {text[:20]}...")
    return text


def _float(text: str) -> float:
    value = float(_number(text))
    if not math.isfinite(value):
        raise GPTQError(f"number {text} is out of the range of a float")
    return value


def _constant(text: str) -> Any:
    raise GPTQError(f"{text} is not a JSON value")


def _object(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise GPTQError(f"key {describe(key)} appears twice in one object")
            seen.add(key)
    return result


def parse_json(data: Union[bytes, str]) -> Any:
    """The value of the UTF-8 JSON text ``data``; GPTQError saying what is
    wrong (the caller names the file)."""
    if isinstance(data, str):
        try:
            data = data.encode("utf-8")
        except UnicodeEncodeError as error:
            raise GPTQError(f"not valid JSON: not UTF-8 text ({error.reason})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise GPTQError(f"not valid JSON: not UTF-8 text (byte {error.start})") from None
    depth = json_depth(data)
    if depth > MAX_JSON_DEPTH:
        raise GPTQError(f"not valid JSON for this reader: nested {depth} deep, deeper than {MAX_JSON_DEPTH}")
    try:
        value = json.loads(
            text, parse_int=lambda t: int(_number(t)), parse_float=_float, parse_constant=_constant,
            object_pairs_hook=_object,
        )
    except GPTQError as error:
        raise GPTQError(f"not valid JSON: {error}") from None
    except ValueError as error:
        raise GPTQError(f"not valid JSON: {error}") from None
    except RecursionError:  # not reached under the depth limit; kept as a guard
        raise GPTQError(f"not valid JSON for this reader: nested deeper than {MAX_JSON_DEPTH}") from None
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise GPTQError("not valid JSON: a \\u escape of an unpaired surrogate (not a character)") from None
    return value


def load_json(path: PathLike, what: str) -> Any:
    """The JSON value in the regular file ``path`` (at most
    :data:`MAX_JSON_BYTES`); GPTQError naming the file."""
    data = read_regular(path, what, MAX_JSON_BYTES)
    try:
        return parse_json(data)
    except GPTQError as error:
        raise GPTQError(f"{path}: {error}") from None


# safetensors --------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class TensorInfo:
    """One tensor of a safetensors file: its dtype, shape, and its bytes
    ``[begin, end)`` counted from the start of the data (after the header)."""

    dtype: str
    shape: Tuple[int, ...]
    begin: int
    end: int

    @property
    def nbytes(self) -> int:
        return self.end - self.begin


def safetensors_header_length(first: bytes, file_size: int) -> int:
    """The header length a safetensors file's first 8 bytes give, checked
    against the limit and the file's ``file_size``."""
    if len(first) < 8:
        raise GPTQError(f"not a safetensors file: {len(first)} bytes, shorter than the 8-byte header length")
    length = int.from_bytes(first[:8], "little")
    if length > MAX_SAFETENSORS_HEADER_BYTES:
        raise GPTQError(
            f"not a safetensors file: header length {length}, more than the {MAX_SAFETENSORS_HEADER_BYTES} "
            "bytes a header may have"
        )
    if 8 + length > file_size:
        raise GPTQError(f"truncated safetensors file: header length {length}, but the file has {file_size} bytes")
    return length


def _natural(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def parse_safetensors_header(header: bytes, data_size: int) -> Dict[str, TensorInfo]:
    """The tensors a safetensors header (the JSON after the length) lists,
    for a file with ``data_size`` bytes after the header. As the format
    (and the safetensors package) requires: a JSON object of tensor name ->
    ``{"dtype", "shape", "data_offsets"}`` and an optional ``__metadata__``
    object of strings; each tensor's bytes exactly its shape's; the tensors
    cover the data exactly, without gaps or overlaps."""
    if not header.startswith(b"{"):
        raise GPTQError("not a safetensors file: the header is not a JSON object")
    try:
        content = parse_json(header)
    except GPTQError as error:
        raise GPTQError(f"safetensors header: {error}") from None
    if not isinstance(content, dict):
        raise GPTQError("safetensors header: not a JSON object")
    tensors: Dict[str, TensorInfo] = {}
    for name, entry in content.items():
        if name == "__metadata__":
            if not isinstance(entry, dict) or not all(isinstance(v, str) for v in entry.values()):
                raise GPTQError("safetensors header: __metadata__ is not an object of strings")
            continue
        where = f"safetensors header: tensor {shown(name)}"
        if not isinstance(entry, dict):
            raise GPTQError(f"{where}: expected an object with dtype, shape and data_offsets")
        dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
        if not isinstance(dtype, str) or dtype not in SAFETENSORS_DTYPE_BYTES:
            raise GPTQError(f"{where}: dtype {describe(dtype)}, expected one of {', '.join(SAFETENSORS_DTYPE_BYTES)}")
        if not isinstance(shape, list) or not all(_natural(extent) for extent in shape):
            raise GPTQError(f"{where}: shape {describe(shape)}, expected a list of sizes >= 0")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(_natural(o) for o in offsets)):
            raise GPTQError(f"{where}: data_offsets {describe(offsets)}, expected [begin, end]")
        begin, end = offsets
        if not begin <= end <= data_size:
            raise GPTQError(f"{where}: data_offsets [{begin}, {end}] outside the file's {data_size} bytes of data")
        expected = math.prod(shape) * SAFETENSORS_DTYPE_BYTES[dtype]
        if end - begin != expected:
            raise GPTQError(f"{where}: {end - begin} bytes of data, but {dtype} {shape} needs {expected}")
        tensors[name] = TensorInfo(dtype, tuple(shape), begin, end)
    position = 0
    for name, info in sorted(tensors.items(), key=lambda item: (item[1].begin, item[1].end)):
        if info.begin != position:
            what = "overlaps the tensor before it" if info.begin < position else f"leaves bytes {position}..{info.begin} unused"
            raise GPTQError(f"safetensors header: tensor {shown(name)} at [{info.begin}, {info.end}] {what}")
        position = info.end
    if position != data_size:
        raise GPTQError(f"safetensors header: the tensors end at byte {position} of {data_size} bytes of data")
    return tensors


def parse_safetensors(data: bytes) -> Tuple[Dict[str, TensorInfo], int]:
    """The tensors of a whole safetensors file held in ``data``, and where
    their data starts."""
    length = safetensors_header_length(data[:8], len(data))
    return parse_safetensors_header(data[8 : 8 + length], len(data) - 8 - length), 8 + length


def tensor_array(buffer: Union[bytes, bytearray], info: TensorInfo) -> np.ndarray:
    """A tensor's array from its bytes: float16 and float32 as they are,
    BF16 widened to float32 (exactly: its bits are float32's high half)."""
    if info.dtype not in NUMPY_DTYPES:
        raise GPTQError(f"dtype {info.dtype} cannot be read")
    array = np.frombuffer(buffer, dtype=NUMPY_DTYPES[info.dtype]).reshape(info.shape)
    if info.dtype == "BF16":
        return (array.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return array


class SafetensorsFile:
    """A safetensors file whose header has been read and checked; tensors
    are read one at a time (:meth:`read`), each from a fresh descriptor of
    the same regular file, so that a checkpoint of many shards holds no
    descriptors open."""

    def __init__(self, path: Path, what: str = "safetensors file"):
        self.path = Path(path)
        self.what = what
        with open_regular(self.path, what) as handle:
            status = os.fstat(handle.fileno())
            self._identity = (status.st_dev, status.st_ino, status.st_size)
            length = self._check(lambda: safetensors_header_length(read_exactly(handle, min(8, status.st_size), 0, self.path, what), status.st_size))
            header = bytes(read_exactly(handle, length, 8, self.path, what))
        self.data_start = 8 + length
        self.tensors = self._check(lambda: parse_safetensors_header(header, status.st_size - self.data_start))

    def _check(self, parse):
        try:
            return parse()
        except GPTQError as error:
            raise GPTQError(f"{self.path}: {error}") from None

    def read(self, name: str) -> np.ndarray:
        """Tensor ``name`` as :func:`tensor_array` gives it."""
        info = self.tensors[name]
        return tensor_array(self.read_range(name, 0, info.nbytes), info)

    def read_range(self, name: str, offset: int, count: int) -> bytearray:
        """Bytes ``[offset, offset + count)`` of tensor ``name``'s data, as
        stored; GPTQError when the file is no longer the one whose header
        was read, or ends early."""
        info = self.tensors[name]
        if offset < 0 or count < 0 or offset + count > info.nbytes:
            raise GPTQError(f"{self.path}: tensor {shown(name)} has no bytes [{offset}, {offset + count})")
        with open_regular(self.path, self.what) as handle:
            status = os.fstat(handle.fileno())
            if (status.st_dev, status.st_ino, status.st_size) != self._identity:
                raise GPTQError(f"{self.path}: changed while it was read")
            return read_exactly(handle, count, self.data_start + info.begin + offset, self.path,
                                f"tensor {shown(name)}")


# .npz parameter archives --------------------------------------------------------

#: What reading a damaged archive or member can raise besides GPTQError:
#: zipfile's own errors, numpy's header parser's, and zlib's and the
#: decompressors' (refused members are never decompressed, but the central
#: directory of a damaged archive may claim anything).
_ARCHIVE_ERRORS = (
    zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, ValueError, SyntaxError,
    RecursionError, TypeError, KeyError, OverflowError, NotImplementedError, RuntimeError,
)


class NpzArchive:
    """An uncompressed ``.npz`` archive of named arrays (the external weights
    ``import-* --external-weights`` writes), read member by member with each
    array's dtype and shape checked against what the reader expects before
    its data is read; zipfile checks each member's CRC as it is read.

    GPTQError naming the archive for a file that is not a regular file or
    not a zip archive, a missing, compressed or encrypted member, a header
    that is not a ``.npy`` header or disagrees with the expected dtype and
    shape, a member of another size, or a CRC mismatch."""

    def __init__(self, path: Path, what: str = "parameter archive"):
        self.path = Path(path)
        self.what = what
        self._handle = open_regular(self.path, what)
        try:
            self._zip = zipfile.ZipFile(self._handle)
            self._members = {info.filename: info for info in self._zip.infolist()}
        except _ARCHIVE_ERRORS + (OSError,) as error:
            self._handle.close()
            raise GPTQError(f"{self.path}: {what} is not a readable zip archive ({reason(error)})") from None

    def __contains__(self, name: str) -> bool:
        return f"{name}.npy" in self._members

    def names(self) -> List[str]:
        """The names of its arrays (members ``NAME.npy``)."""
        return [member[: -len(".npy")] for member in self._members if member.endswith(".npy")]

    def read(self, name: str, dtype: str, shape: Tuple[int, ...]) -> np.ndarray:
        """Array ``name`` (member ``name.npy``), which must be of numpy dtype
        ``dtype`` (e.g. ``"<i4"``) and ``shape``, in C order."""
        where = f"{self.path}: array {shown(name)}"
        info = self._members.get(f"{name}.npy")
        if info is None:
            raise GPTQError(f"{where}: missing from the {self.what}")
        if info.compress_type != zipfile.ZIP_STORED:
            raise GPTQError(f"{where}: compressed; the {self.what} must be stored uncompressed")
        if info.flag_bits & 0x1:
            raise GPTQError(f"{where}: encrypted")
        expected = np.dtype(dtype)
        try:
            with self._zip.open(info) as member:
                version = np.lib.format.read_magic(member)
                if version == (1, 0):
                    found_shape, fortran, found_dtype = np.lib.format.read_array_header_1_0(member)
                elif version == (2, 0):
                    found_shape, fortran, found_dtype = np.lib.format.read_array_header_2_0(member)
                else:
                    raise GPTQError(f"{where}: .npy format version {version}, expected 1.0 or 2.0")
                if found_dtype != expected or found_dtype.hasobject:
                    raise GPTQError(f"{where}: dtype {found_dtype.str}, expected {expected.str}")
                if tuple(found_shape) != tuple(shape) or (fortran and len(shape) > 1):
                    order = " (Fortran order)" if fortran else ""
                    raise GPTQError(f"{where}: shape {list(found_shape)}{order}, expected {list(shape)}")
                nbytes = math.prod(shape) * expected.itemsize
                if info.file_size - member.tell() != nbytes:
                    raise GPTQError(
                        f"{where}: {info.file_size - member.tell()} bytes of data, expected {nbytes} for "
                        f"{expected.str} {list(shape)}"
                    )
                data = member.read(nbytes)
                if len(data) != nbytes or member.read(1):
                    raise GPTQError(f"{where}: its member ends early")
        except GPTQError:
            raise
        except _ARCHIVE_ERRORS + (OSError,) as error:
            raise GPTQError(f"{where}: unreadable ({reason(error)})") from None
        return np.frombuffer(data, dtype=expected).reshape(shape)

    def close(self) -> None:
        self._zip.close()
        self._handle.close()

    def __enter__(self) -> "NpzArchive":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def reason(error: BaseException) -> str:
    """An exception as one short line of a message."""
    text = " ".join(str(error).split()) or type(error).__name__
    return shown(text, 160)
