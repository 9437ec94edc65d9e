"""How a command ends on SIGINT, SIGTERM and SIGHUP (docs/reliability.md).

While a command runs (:func:`raising`), SIGINT raises KeyboardInterrupt
and SIGTERM and SIGHUP raise :class:`~gptq_mlir.errors.Terminated` in the
main thread, so that the code running unwinds and its ``with`` blocks
remove their temporaries; :func:`held` holds them back while temporaries
are made, renamed or removed. Every signal is also recorded
(:func:`received`), because the exception a handler raises does not always
reach the command line as it was raised: an extension module that calls
back into Python may turn it into another (torch's import gives
``RuntimeError: KeyboardInterrupt: <EMPTY MESSAGE>``, NumPy's an
ImportError, Python 3.11 wraps it in RuntimeError when it comes inside a
class's ``__set_name__``) or swallow it. The command line reports the
signal received, whatever its exception became.

This module imports nothing but the standard library and
:mod:`gptq_mlir.errors`, so that ``python -m gptq_mlir`` installs the
handlers (:func:`install`) before it imports NumPy: a signal during the
imports ends the command the same way.
"""

import contextlib
import signal
from typing import Callable, Dict, Iterator, Optional

from .errors import Terminated

#: The signals that end a command, and their names in the message.
ENDING: Dict[int, str] = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}


class _State:
    #: The handlers replaced by ours, while ours are installed (None otherwise).
    previous: Optional[Dict[int, Callable]] = None
    #: Whether a signal raises (while a command runs) or is only recorded.
    raising = False
    #: The first signal received since the handlers were installed.
    received: Optional[int] = None
    #: A SIGTERM or SIGHUP has raised Terminated (later ones do not).
    terminated = False
    #: How deep the main thread is in held(), and the exception a handler
    #: raised meanwhile, to be raised at its end.
    depth = 0
    pending: Optional[BaseException] = None


def exception(signum: int) -> BaseException:
    """What signal ``signum`` raises: KeyboardInterrupt for SIGINT, else
    Terminated."""
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum, ENDING[signum])


def message(signum: int) -> str:
    """The error message of a command ended by ``signum``."""
    return "interrupted" if signum == signal.SIGINT else f"terminated ({ENDING[signum]})"


def status(signum: int) -> int:
    """The exit status of a command ended by ``signum``: 128 + its number
    (130 for SIGINT, 143 for SIGTERM)."""
    return 128 + signum


def received() -> Optional[int]:
    """The first of the ending signals received since the handlers were
    installed, None when none was."""
    return _State.received


def raise_when_not_held(error: BaseException) -> None:
    """For signal handlers: raise ``error`` now, or, inside :func:`held`,
    when it ends (the first of several)."""
    if _State.depth:
        if _State.pending is None:
            _State.pending = error
        return
    raise error


def _handler(signum: int, frame) -> None:
    del frame
    if _State.received is None:
        _State.received = signum
    if not _State.raising:
        return
    if signum == signal.SIGINT:
        raise_when_not_held(KeyboardInterrupt())
    elif not _State.terminated:
        _State.terminated = True
        raise_when_not_held(exception(signum))


def install() -> bool:
    """Handle the ending signals with ours, recording them (and raising
    them inside :func:`raising`); False, and nothing changed, outside the
    main thread or when ours are installed already. A signal that is
    ignored (SIGINT in a background job, SIGHUP under nohup) stays
    ignored."""
    if _State.previous is not None:
        return False
    previous = {}
    try:
        for signum in ENDING:
            if signal.getsignal(signum) != signal.SIG_IGN:
                previous[signum] = signal.signal(signum, _handler)
    except ValueError:  # not the main thread
        for signum, old in previous.items():
            signal.signal(signum, old)
        return False
    _State.previous = previous
    _State.received, _State.terminated = None, False
    return True


def uninstall() -> None:
    """Put back the handlers :func:`install` replaced."""
    if _State.previous is not None:
        for signum, old in _State.previous.items():
            signal.signal(signum, old)
        _State.previous = None


def ignore() -> None:
    """Ignore the ending signals that ours handle, from now on (for the end
    of a process whose command has ended)."""
    if _State.previous is not None:
        for signum in _State.previous:
            signal.signal(signum, signal.SIG_IGN)


@contextlib.contextmanager
def raising() -> Iterator[None]:
    """In the body, the ending signals raise (installed for the body when
    they are not installed yet, and put back after it)."""
    installed = install()
    was_raising, _State.raising = _State.raising, True
    try:
        yield
    finally:
        _State.raising = was_raising
        if installed:
            uninstall()


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Hold back SIGINT, SIGTERM and SIGHUP for the body: our handler,
    which raises through :func:`raise_when_not_held`, raises when the body
    ends. The signals are also blocked in this thread, for callers without
    our handlers; that alone is not enough, as a signal sent to the process
    reaches any thread that does not block it (NumPy's own threads), whose
    Python handler then runs in the main thread at once."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, ENDING)
    _State.depth += 1
    try:
        yield
    finally:
        _State.depth -= 1
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        if not _State.depth and _State.pending is not None:
            error, _State.pending = _State.pending, None
            raise error
