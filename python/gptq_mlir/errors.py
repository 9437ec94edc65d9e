"""The error type every user-facing failure of the package is reported with."""


class GPTQError(Exception):
    """A failure the command line reports as a one-line message, not a traceback.

    Raised for bad inputs (corrupt checkpoints, wrong tokenizer files, empty
    text, sequences that are too long) and for failures of the tools the
    package drives.
    """
