"""The parameter archives a module names (``gptq.parameters``), as the C
API reads them (:meth:`.native.NativeModule.parameter_archives`): the
commands check them against their outputs.
"""

import os
from pathlib import Path
from typing import List, Union

from . import native
from ..errors import GPTQError


def parameter_archives(path: Union[str, os.PathLike]) -> List[Path]:
    """The parameter archives that the MLIR module at ``path`` (text or
    bytecode) names in its ``gptq.parameters`` attribute (relative to the
    module's folder); for a safetensors index, the index and the shards it
    lists. Empty when it names none, cannot be read or parsed, or is not a
    regular file (refused without blocking): the command that reads it
    then says why. The module is opened with :func:`.native.open_module`,
    so that a command that goes on to call it does not parse it again."""
    try:
        return native.open_module(path).parameter_archives()
    except GPTQError:
        return []
