"""The parameter archives a module names (``gptq.parameters``), found
without parsing the module: :mod:`.native` keys its cache of compiled
modules on them, and the commands check them against their outputs.
"""

import os
import re
import stat
from pathlib import Path
from typing import List, Union

from ..errors import GPTQError
from ..files import inputs

#: The module attribute that names a model's parameter archives (see
#: :mod:`gptq_mlir.importers.emitter`), as written in MLIR text: a string, or an array
#: of strings.
_PARAMETERS = re.compile(rb'gptq\.parameters\s*=\s*("(?:[^"\\]|\\.)*"|\[[^\]]*\])')
_STRING = re.compile(rb'"((?:[^"\\]|\\.)*)"')
#: How much of a module's text is searched for its attributes: they open the
#: module, after at most the printer's aliases.
_HEADER_BYTES = 1 << 24


def parameter_archives(path: Union[str, os.PathLike]) -> List[Path]:
    """The parameter archives that the MLIR module at ``path`` names in its
    ``gptq.parameters`` attribute (relative to the module's folder); for a
    safetensors index, the index and the shards it lists. Empty when it
    names none, cannot be read, is not a regular file or is bytecode. Read
    from the module's text up to its ``module`` line, so a large module is
    not read whole."""
    try:
        # Without blocking: opening a FIFO to read waits for a writer.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with open(descriptor, "rb") as handle:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                return []
            read = 0
            while read < _HEADER_BYTES:
                line = handle.readline(_HEADER_BYTES - read)
                if not line or line.startswith(b"ML\xefR"):
                    return []
                read += len(line)
                if line.lstrip().startswith(b"module"):
                    match = _PARAMETERS.search(line)
                    break
            else:
                return []
    except OSError:
        return []
    if match is None:
        return []
    files = []
    for literal in _STRING.findall(match.group(1)):
        archive = Path(path).parent / os.fsdecode(_ESCAPE.sub(_unescape, literal))
        files.append(archive)
        if archive.name.endswith(".json"):
            files.extend(_shards(archive))
    return files


def _shards(index: Path) -> List[Path]:
    """The shards a safetensors index lists (none when it cannot be read:
    the tools that read it say why)."""
    try:
        weight_map = inputs.load_json(index, "index").get("weight_map")
        names = sorted({name for name in weight_map.values() if isinstance(name, str) and Path(name).name == name})
    except (GPTQError, AttributeError):
        return []
    return [index.parent / name for name in names]


#: An escape in an MLIR string: two hexadecimal digits, or a character.
_ESCAPE = re.compile(rb"\\([0-9A-Fa-f]{2}|.)", re.DOTALL)


def _unescape(match: "re.Match[bytes]") -> bytes:
    code = match.group(1)
    if len(code) == 2:
        return bytes([int(code, 16)])
    return {b"n": b"\n", b"t": b"\t"}.get(code, code)
