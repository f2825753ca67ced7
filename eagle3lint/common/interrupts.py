"""Ctrl-C, wherever it lands: one line and exit 130 (``verify`` reports its own way), never a
traceback nor a death by the signal.

The entry point (``eagle3lint.__main__``) installs :func:`on_interrupt` before it imports the
command line. While the command runs, SIGINT raises ``KeyboardInterrupt`` where the run is, as
Python's own handler does, so that what cleans up on the way out does (``fix --apply`` removes
its temporary file, the parse workers are stopped, ``verify`` tears its server down, shielded
from a second Ctrl-C); the command says so, or the entry point does when the interrupt came
before or after the command's own handling. Once the command has ended, SIGINT ends the process
at once, saying so.

The process ends through ``os._exit`` because the interpreter's own exit is where an interrupt
still does harm: ``python -m`` kills itself with SIGINT at exit when a ``KeyboardInterrupt``
once left code run by ``exec`` of a string (dataclasses and named tuples make their methods that
way), even one the program caught, and its shutdown can report a worker pool's closed pipe.
A finished command has nothing left for that shutdown to do.
"""

from __future__ import annotations

# Nothing the interpreter has not loaded already (not even ``typing``, ``contextlib``): this
# module is imported before the handler is in place.
import os
import signal
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import FrameType
    from typing import NoReturn

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it
MESSAGE = "eagle3lint: interrupted"

_finishing = False  # the command has ended: nothing is left to clean up
_said = False


def new_run() -> None:
    """A command starts: it has not said it was interrupted (an in-process caller runs many)."""
    global _said
    _said = False


def say_interrupted() -> None:
    """The one line an interrupted command prints, at most once."""
    global _said
    if _said:
        return
    _said = True
    try:
        sys.stderr.write(MESSAGE + "\n")
        sys.stderr.flush()
    except Exception:  # a closed stream, or one the signal interrupted mid-write
        try:  # noqa: SIM105 - contextlib is not loaded this early
            os.write(2, (MESSAGE + "\n").encode())
        except OSError:
            pass


def on_interrupt(signum: int, frame: FrameType | None) -> None:
    if _finishing:
        exit_now(EXIT_INTERRUPTED)
    raise KeyboardInterrupt


def install() -> None:
    """Take over SIGINT, unless it is ignored (``nohup``, a background job): it stays so."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, on_interrupt)


def finishing() -> None:
    global _finishing
    _finishing = True


def exit_now(code: int) -> NoReturn:
    """End the process with ``code``, its output flushed (an interrupted one says so)."""
    finishing()
    if code == EXIT_INTERRUPTED:
        say_interrupted()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:  # a closed or broken stream: its report was already lost
            pass
    os._exit(code)
