"""The command's entry point, for ``python -m gptq_mlir`` and the
``gptq-mlir`` console command alike (see pyproject.toml)."""

import contextlib
import os

from .. import signals


def _run() -> int:
    # Before NumPy and the commands are imported, which takes a while: a
    # signal meanwhile ends the command as one during its work does, once
    # the imports are done (raised inside them, it would interrupt NumPy's
    # initialization, which turns it into an ImportError, or the import
    # machinery, which prints it).
    signals.install()
    try:
        with signals.raising(), signals.held():
            from .commands import main
    except BaseException:
        if signals.received() is None:
            raise
        with contextlib.suppress(OSError):
            os.write(2, f"gptq_mlir: error: {signals.message(signals.received())}\n".encode())
        return signals.status(signals.received())
    return main()


def main() -> int:
    """Run the command line and return its exit status."""
    status = _run()
    # A signal that comes after the command ended (its outputs in place, its
    # last line printed) leaves its exit status as it is, while the
    # interpreter exits too (torch's teardown takes a fraction of a second).
    signals.ignore()
    # CPython remembers a KeyboardInterrupt that ended any string it
    # evaluated (dataclasses and named tuples make their methods so), even
    # one caught later, and then ends the interpreter by SIGINT whatever the
    # status it exits with; evaluating a string resets that.
    exec("")
    return status
