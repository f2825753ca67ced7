"""The standard streams a report goes to, made safe for what a shell can hand over.

* Standard output that cannot take the report (closed with ``>&-``, where Python holds
  ``None``; a full disk) fails the command, once it has run, with a message and exit code 2,
  not an AttributeError or OSError traceback. A closed descriptor is also held open on ``/dev/null``,
  so that no file opened later takes its number (a child process writing to its standard
  output would write into that file).
* A reader that goes away (``| head -1``) ends the run quietly: click turns the broken pipe
  into exit code 1, and the interpreter's last flush is pointed at ``/dev/null`` so that it has
  nowhere to fail ("Exception ignored", exit code 120).
* Text a stream cannot encode never ends a run: a file name's bytes that are not UTF-8 (held
  as surrogates, the way ``os.fsdecode`` leaves them) go out as those same bytes, as ``ls``
  prints them; any other character a narrow encoding lacks becomes a backslash escape.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import os
import sys
from dataclasses import dataclass
from typing import Any, TextIO

ERRORS = "eagle3lint-output"


class GuardedOutput(io.TextIOBase):
    """Standard output, or its absence, that records a write failure instead of raising it: the
    command runs to its end, then fails with the problem (exit code 2). A broken pipe passes
    through: click ends the command quietly on it."""

    def __init__(self, inner: TextIO | None) -> None:
        super().__init__()
        self.inner = inner
        self.problem: str | None = None

    def write(self, text: str) -> int:
        if not isinstance(text, str):  # click probes with bytes to tell text streams apart
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if not text or self.problem is not None:
            return len(text)  # an empty write is no test of the stream; after a failure, dropped
        if self.inner is None:
            self.problem = "standard output is closed; nothing could be written to it"
            return len(text)
        try:
            return self.inner.write(text)
        except BrokenPipeError:
            raise
        except OSError as exc:
            self.problem = f"cannot write standard output: {exc.strerror or exc}"
            return len(text)

    def flush(self) -> None:
        if self.inner is None or self.problem is not None:
            return
        try:
            self.inner.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            self.problem = f"cannot write standard output: {exc.strerror or exc}"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.inner is not None and self.inner.isatty()

    def fileno(self) -> int:
        if self.inner is None:
            raise io.UnsupportedOperation("standard output is closed")
        return self.inner.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.inner, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.inner, "errors", None)

    def __getattr__(self, name: str) -> Any:  # ``buffer`` and the like, for click
        if self.inner is None:
            raise AttributeError(name)
        return getattr(self.inner, name)


def _output_errors(exc: UnicodeError) -> tuple[str | bytes, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    code = ord(exc.object[exc.start])
    if 0xDC80 <= code <= 0xDCFF:  # one byte os.fsdecode could not decode
        return bytes([code - 0xDC00]), exc.start + 1
    return exc.object[exc.start].encode("ascii", "backslashreplace").decode("ascii"), exc.start + 1


codecs.register_error(ERRORS, _output_errors)


def _hold_descriptor(fd: int) -> None:
    try:
        os.fstat(fd)
        return
    except OSError:
        pass
    with contextlib.suppress(OSError):
        spare = os.open(os.devnull, os.O_RDWR)
        if spare != fd:
            os.dup2(spare, fd)
            os.close(spare)
        os.set_inheritable(fd, True)


@dataclass
class Streams:
    """The streams a command found, and the guard it writes its output through."""

    stdout: Any
    stderr: Any
    guard: GuardedOutput


def prepare_streams() -> Streams:
    """Called before a command runs."""
    for fd in (0, 1, 2):
        _hold_descriptor(fd)
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            with contextlib.suppress(AttributeError, ValueError, io.UnsupportedOperation):
                stream.reconfigure(errors=ERRORS)
    streams = Streams(sys.stdout, sys.stderr, GuardedOutput(sys.stdout))
    sys.stdout = streams.guard
    if sys.stderr is None:
        # Messages to a closed standard error are dropped; the exit code still tells.
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
    return streams


def finish_streams(streams: Streams) -> str | None:
    """Flush standard output before the interpreter's own last flush (whose failure would print
    "Exception ignored" and exit 120), and put back the streams an in-process caller had.
    Returns the problem to report: none when all was written or the reader went away (a broken
    pipe is the reader's choice); else why the output was lost (closed, a full disk)."""
    sys.stdout, sys.stderr = streams.stdout, streams.stderr
    original = streams.stdout
    problem = streams.guard.problem
    if original is None:
        return problem
    if problem is None:
        try:
            original.flush()
        except BrokenPipeError:
            pass
        except OSError as exc:
            problem = f"cannot write standard output: {exc.strerror or exc}"
        except ValueError:  # closed by the command itself
            return None
        else:
            return None
    _silence(original)
    return problem


def _silence(stream: TextIO) -> None:
    """Whatever is left in ``stream``'s buffer goes to /dev/null at the interpreter's exit."""
    with contextlib.suppress(OSError, ValueError, AttributeError, io.UnsupportedOperation):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
