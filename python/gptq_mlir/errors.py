"""The error types every user-facing failure of the package is reported with."""


class GPTQError(Exception):
    """A failure the command line reports as a one-line message, not a traceback.

    Raised for bad inputs (corrupt checkpoints, wrong tokenizer files, empty
    text, sequences that are too long) and for failures of the tools the
    package drives.
    """


class Terminated(BaseException):
    """Raised by the command line's handler of SIGTERM and SIGHUP, so that
    the code running when the signal came unwinds as for Ctrl-C (which
    raises KeyboardInterrupt) and removes its temporary files.

    A BaseException, as KeyboardInterrupt is, so that ``except Exception``
    does not swallow it."""

    def __init__(self, signum: int, name: str):
        super().__init__(f"terminated ({name})")
        self.signum = signum
