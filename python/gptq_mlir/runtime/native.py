"""Compiled modules called in-process, through the project's C interface.

``libGPTQCAPI.so`` (``include/gptq-c/Run.h``) compiles an entry of an MLIR
module once and calls it on NumPy arrays: arguments are read in place,
results come back as arrays over the memory the compiled code returned,
freed when the last array that views it goes. Errors are
:class:`GPTQError` with the library's message; a bad argument never
crashes the process::

    module = NativeModule("model.mlir")
    (logits,) = module.call("forward", [tokens])

:meth:`NativeModule.describe_model` is what Python reads of a module
without calling it (its attributes, parameter archives, constants and
quantized layers), found by the library walking the IR: the package never
parses MLIR text itself.

:func:`open_module` keeps one :class:`NativeModule` per file (reopened when
the file changes), so that every caller in a process shares the compiled
code. The library is found as :mod:`gptq_mlir.runtime.paths` says
(``$GPTQ_MLIR_BUILD_DIR/lib``, the checkout's ``build/lib``, or
``$GPTQ_CAPI_LIB``).
"""

import ctypes
import json
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import paths
from ..errors import GPTQError
from ..files import inputs

LIBRARY = "libGPTQCAPI.so"

#: GptqDType's values, in order.
_DTYPES = [
    np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int8), np.dtype(np.uint8),
    np.dtype(np.int16), np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.bool_),
    np.dtype(np.float16), None,  # bfloat16: no NumPy dtype; passed as uint16 bits
]
_DTYPE_CODES = {dtype: code for code, dtype in enumerate(_DTYPES) if dtype is not None}


class _Buffer(ctypes.Structure):
    _fields_ = [
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_int32),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("data", ctypes.c_void_p),
    ]


#: The libraries loaded, by path (one, unless the environment changes).
_libraries: Dict[Path, ctypes.CDLL] = {}
_library_lock = threading.Lock()


def library_path() -> Path:
    return paths.library(LIBRARY)


def _load() -> ctypes.CDLL:
    with _library_lock:
        path = library_path()
        if path in _libraries:
            return _libraries[path]
        if not path.is_file():
            raise GPTQError(paths.missing(LIBRARY, path, "GPTQCAPI"))
        try:
            lib = ctypes.CDLL(str(path))
        except OSError as error:
            raise GPTQError(f"cannot load {path}: {error}") from error
        error_p = ctypes.c_void_p
        lib.gptqErrorMessage.argtypes = [error_p]
        lib.gptqErrorMessage.restype = ctypes.c_char_p
        lib.gptqErrorFree.argtypes = [error_p]
        lib.gptqErrorFree.restype = None
        lib.gptqModuleOpen.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
        lib.gptqModuleOpen.restype = error_p
        lib.gptqModuleFree.argtypes = [ctypes.c_void_p]
        lib.gptqModuleFree.restype = None
        lib.gptqModuleDescribe.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]
        lib.gptqModuleDescribe.restype = error_p
        lib.gptqModuleDescribeModel.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p)]
        lib.gptqModuleDescribeModel.restype = error_p
        lib.gptqModuleResource.argtypes = [
            ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
        ]
        lib.gptqModuleResource.restype = error_p
        lib.gptqModuleCompile.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_double)]
        lib.gptqModuleCompile.restype = error_p
        lib.gptqModuleNumResults.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t)]
        lib.gptqModuleNumResults.restype = error_p
        lib.gptqModuleCall.argtypes = [
            ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(_Buffer), ctypes.c_size_t,
            ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t),
        ]
        lib.gptqModuleCall.restype = error_p
        lib.gptqArrayBuffer.argtypes = [ctypes.c_void_p]
        lib.gptqArrayBuffer.restype = _Buffer
        lib.gptqArrayByteSize.argtypes = [ctypes.c_void_p]
        lib.gptqArrayByteSize.restype = ctypes.c_size_t
        lib.gptqArrayFree.argtypes = [ctypes.c_void_p]
        lib.gptqArrayFree.restype = None
        _libraries[path] = lib
        return lib


def available() -> bool:
    """Whether the library is built and loads."""
    try:
        _load()
        return True
    except GPTQError:
        return False


def error_line(message: str) -> str:
    """The line of a message that says what failed, so that a failure stays
    one line: the first that says ``error:`` (the cause; what follows it,
    the source line and a caret, notes, a tool's own summary, adds nothing),
    else the last one. For the library's errors and ``gptq-opt``'s stderr."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    errors = [line for line in lines if "error:" in line]
    return errors[0] if errors else (lines or ["no message"])[-1]


def _check(lib: ctypes.CDLL, error: Optional[int]) -> None:
    if error:
        message = lib.gptqErrorMessage(error).decode("utf-8", "replace")
        lib.gptqErrorFree(error)
        raise GPTQError(error_line(message))


class _Owner:
    """One result's memory, freed when the last array that views it goes."""

    def __init__(self, lib: ctypes.CDLL, handle: int):
        self._lib = lib
        self.handle = handle

    def __del__(self):
        if self.handle:
            self._lib.gptqArrayFree(self.handle)
            self.handle = None


def _result_array(lib: ctypes.CDLL, handle: int) -> np.ndarray:
    owner = _Owner(lib, handle)
    buffer = lib.gptqArrayBuffer(handle)
    shape = tuple(buffer.shape[i] for i in range(buffer.rank))
    dtype = _DTYPES[buffer.dtype] if buffer.dtype < len(_DTYPES) else None
    if dtype is None:
        dtype = np.dtype(np.uint16)  # bfloat16 bits
    size = lib.gptqArrayByteSize(handle)
    if size == 0 or not buffer.data:
        return np.zeros(shape, dtype)
    memory = (ctypes.c_char * size).from_address(buffer.data)
    # The ctypes object keeps the owner; NumPy keeps the ctypes object.
    memory._owner = owner  # type: ignore[attr-defined]
    return np.frombuffer(memory, dtype=dtype).reshape(shape)


class _Handle:
    """An open module, freed when the last holder goes: its
    :class:`NativeModule` and the arrays :meth:`NativeModule.resource`
    returned (which view its memory)."""

    def __init__(self, lib: ctypes.CDLL, handle: int):
        self._lib = lib
        self.handle = handle

    def __del__(self):
        if self.handle:
            self._lib.gptqModuleFree(self.handle)
            self.handle = None


class NativeModule:
    """An MLIR module opened through ``libGPTQCAPI.so``; its entries are
    compiled on first use and kept. Not thread-safe: one call at a time."""

    def __init__(self, path: Union[str, os.PathLike], cache_dir: Optional[str] = None):
        self._lib = _load()
        self.path = Path(path)
        handle = ctypes.c_void_p()
        cache = None if cache_dir is None else os.fsencode(cache_dir)
        _check(self._lib, self._lib.gptqModuleOpen(os.fsencode(self.path), cache, ctypes.byref(handle)))
        self._owner = _Handle(self._lib, handle.value)
        self._handle = handle.value
        self._lock = threading.RLock()
        self._signatures: Dict[str, List[str]] = {}
        self._model: Optional[Dict[str, Any]] = None

    def close(self) -> None:
        """Closes the module; it is freed once the arrays that
        :meth:`resource` returned are gone too."""
        self._handle = None
        self._owner = None

    def __del__(self):
        self.close()

    def _live(self) -> int:
        if not self._handle:
            raise GPTQError(f"{self.path}: the module was closed")
        return self._handle

    def describe(self, entry: Optional[str] = None) -> Dict[str, Any]:
        """As ``gptq-run --describe``: ``{"model": {...} or None, "functions":
        [...]}``; with ``entry``, that function only, and GPTQError when it
        cannot be called."""
        text = ctypes.c_char_p()
        name = None if entry is None else entry.encode()
        with self._lock:
            _check(self._lib, self._lib.gptqModuleDescribe(self._live(), name, ctypes.byref(text)))
            return json.loads(text.value.decode("utf-8"))

    def describe_model(self) -> Dict[str, Any]:
        """What the library reads of the module (``gptqModuleDescribeModel``
        in docs/c-api.md): ``{"attributes": {...}, "parameters": [...] or
        None, "functions": [{"name", "constants", "layers"}]}``."""
        if self._model is None:
            text = ctypes.c_char_p()
            with self._lock:
                _check(self._lib, self._lib.gptqModuleDescribeModel(self._live(), ctypes.byref(text)))
                self._model = json.loads(text.value.decode("utf-8"))
        return self._model

    def resource(self, key: str) -> np.ndarray:
        """The bytes of the module's resource blob ``key`` (a constant the
        file holds), as a read-only uint8 array over the module's memory,
        which stays open while the array lives."""
        data, size = ctypes.c_void_p(), ctypes.c_size_t()
        with self._lock:
            _check(self._lib, self._lib.gptqModuleResource(
                self._live(), key.encode("utf-8", "surrogateescape"), ctypes.byref(data), ctypes.byref(size)))
        if size.value == 0:
            return np.zeros(0, np.uint8)
        memory = (ctypes.c_char * size.value).from_address(data.value)
        memory._owner = self._owner  # type: ignore[attr-defined]
        array = np.frombuffer(memory, dtype=np.uint8)
        array.flags.writeable = False
        return array

    def parameter_archives(self) -> List[Path]:
        """The files of the parameter archives the module names (relative to
        its folder); for a safetensors index, the index and the shards it
        lists. GPTQError for a gptq.parameters attribute that names none."""
        names = self.describe_model()["parameters"]
        if names is None:
            return []
        if isinstance(names, dict):
            raise GPTQError(f"{self.path}: {names['error']}")
        files = []
        for name in names:
            archive = self.path.parent / name
            files.append(archive)
            if archive.name.endswith(".json"):
                files.extend(_shards(archive))
        return files

    def compile(self, entry: str) -> float:
        """Compiles ``entry`` now (a call would, on first use); returns the
        seconds it took (or took to load from the cache)."""
        seconds = ctypes.c_double()
        with self._lock:
            _check(self._lib, self._lib.gptqModuleCompile(self._live(), entry.encode(), ctypes.byref(seconds)))
        return seconds.value

    def _kinds(self, entry: str) -> List[str]:
        """The kind of each argument of ``entry``: tensor, memref or scalar."""
        if entry not in self._signatures:
            (function,) = self.describe(entry)["functions"]
            self._signatures[entry] = [spec["kind"] for spec in function["inputs"]]
        return self._signatures[entry]

    def call(self, entry: str, inputs: Sequence[np.ndarray]) -> List[np.ndarray]:
        """``entry``'s results on ``inputs``. Tensor arguments are read in
        place when C-ordered (others are copied once to C order); memref
        arguments are written in place, so they must be C-ordered, writable
        arrays of the entry's dtype (a KV cache that each call updates)."""
        kinds = self._kinds(entry)
        arrays = []
        for index, array in enumerate(inputs):
            if index < len(kinds) and kinds[index] == "memref":
                if not isinstance(array, np.ndarray) or not array.flags.c_contiguous or not array.flags.writeable:
                    raise GPTQError(
                        f"@{entry}: argument #{index} is written in place: pass a C-ordered, writable NumPy array"
                    )
                arrays.append(array)
            else:
                # (np.ascontiguousarray would make a scalar an array of one.)
                arrays.append(np.require(np.asarray(array), requirements="C"))
        buffers = (_Buffer * max(len(arrays), 1))()
        shapes = []
        for index, array in enumerate(arrays):
            code = _DTYPE_CODES.get(array.dtype)
            if code is None:
                raise GPTQError(f"@{entry}: argument {index}: unsupported dtype {array.dtype}")
            shape = (ctypes.c_int64 * max(array.ndim, 1))(*array.shape)
            shapes.append(shape)
            buffers[index].dtype = code
            buffers[index].rank = array.ndim
            buffers[index].shape = shape
            buffers[index].data = array.ctypes.data if array.size else None
        with self._lock:
            count = ctypes.c_size_t()
            _check(self._lib, self._lib.gptqModuleNumResults(self._live(), entry.encode(), ctypes.byref(count)))
            results = (ctypes.c_void_p * max(count.value, 1))()
            returned = ctypes.c_size_t()
            _check(
                self._lib,
                self._lib.gptqModuleCall(
                    self._live(), entry.encode(), buffers, len(arrays), results, count.value, ctypes.byref(returned)
                ),
            )
        return [_result_array(self._lib, results[i]) for i in range(returned.value)]


def _shards(index: Path) -> List[Path]:
    """The shards a safetensors index lists (none when it cannot be read:
    the tools that read it say why)."""
    try:
        weight_map = inputs.load_json(index, "index").get("weight_map")
        names = sorted({name for name in weight_map.values() if isinstance(name, str) and Path(name).name == name})
    except (GPTQError, AttributeError):
        return []
    return [index.parent / name for name in names]


#: How many modules open_module keeps open (the most recently used).
_KEPT = 8
#: By resolved path: (the module file's identity, its archives, the module).
_modules: "OrderedDict[Path, Tuple[tuple, List[Path], NativeModule]]" = OrderedDict()
_modules_lock = threading.Lock()


def _identity(path: Path) -> tuple:
    """What says that a file is the same: inode, size, modification time."""
    info = os.stat(path)
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def _identities(module: tuple, archives: List[Path]) -> tuple:
    return (library_path(), module) + tuple(
        _identity(archive) if archive.exists() else None for archive in archives
    )


def open_module(path: Union[str, os.PathLike]) -> NativeModule:
    """The process's :class:`NativeModule` for the file at ``path``: opened
    once and kept while the file and the parameter archives it names stay
    the same (by inode, size and modification time), so that its compiled
    entries serve every later caller. The last few modules used stay open.
    An unchanged file names the same archives: a module kept is not parsed
    again to find them."""
    resolved = Path(path).resolve()
    try:
        identity = _identity(resolved)
        with _modules_lock:
            known = _modules.get(resolved)
        if known is not None and known[0] == _identities(identity, known[1]):
            with _modules_lock:
                _modules.move_to_end(resolved)
            return known[2]
        module = NativeModule(path)
        try:
            archives = module.parameter_archives()
        except GPTQError:
            archives = []  # compiling an entry says what is wrong with them
        # Taken before the module was read: a file changed since is read
        # again next time.
        key = _identities(identity, archives)
    except OSError as error:
        raise GPTQError(f"cannot read {path}: {error.strerror or error}") from error
    with _modules_lock:
        _modules[resolved] = (key, archives, module)
        _modules.move_to_end(resolved)
        while len(_modules) > _KEPT:
            _modules.popitem(last=False)
    return module
