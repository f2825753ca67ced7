"""Reading a model folder's files as untrusted input: a downloaded checkpoint may hold named
pipes, links to devices or to files elsewhere, an index naming ``/etc/passwd``, or JSON built to
exhaust the parser. Everything here either returns data that was safe to read or raises
:class:`ModelFileError` with a message naming the file; nothing blocks or reads without bound.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path, PurePosixPath
from typing import Any

from eagle3lint.common.safe_io import (
    FileTooLarge,
    file_kind,
    open_regular_file,
    os_problem,
    read_regular_file,
)

# config.json files are kilobytes; a sharded index of a 1T-parameter model a few megabytes
# (one line per tensor); a tokenizer_config.json with a large added-token table tens of MB.
MAX_JSON_BYTES = 64 * 1024 * 1024
# A whole 64-bit size: anything outside is not a dimension, a count or an offset.
MAX_SIZE = 2**63 - 1


class ModelFileError(Exception):
    """A model file that cannot be used; the message names the file and the problem."""


class OutsideFolder(ModelFileError):
    """A link out of the model folder: never followed (a downloaded folder could point at any
    file of the user's), so what it holds is not checked."""


def allowed_roots(folder: Path) -> tuple[Path, ...]:
    """Where a model folder's files may lie once links are followed: the folder itself, and for
    a Hugging Face cache snapshot (``models--org--name/snapshots/<rev>``, whose files are links
    to ``../../blobs/<hash>``) the cached repository holding it."""
    real = Path(os.path.realpath(folder))
    roots = [real]
    if real.parent.name == "snapshots" and real.parent.parent.name.startswith(("models--", "datasets--")):
        roots.append(real.parent.parent)
    return tuple(roots)


def locate(folder: Path, name: str) -> Path:
    """The real path of ``name`` inside ``folder``, or :class:`ModelFileError` when the name
    leaves the folder (absolute, ``..``) or a link leads to something that is not a regular
    file, :class:`OutsideFolder` when a link leads to a regular file elsewhere, and
    ``FileNotFoundError`` when it leads nowhere."""
    pure = PurePosixPath(name)
    if not name or "\0" in name or pure.is_absolute() or ".." in pure.parts:
        raise ModelFileError(f"names {describe(name)}, which is not a file inside the model folder")
    real = Path(os.path.realpath(folder / name))
    if not any(real == root or root in real.parents for root in allowed_roots(folder)):
        # A link to a device or a pipe is refused as such wherever it points (stat opens
        # nothing); only a regular file elsewhere is the user's own business.
        try:
            mode = os.stat(real).st_mode
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise ModelFileError(f"{folder / name}: {os_problem(exc)}") from exc
        if not stat.S_ISREG(mode):
            raise ModelFileError(f"{folder / name}: is not a regular file ({file_kind(mode)}, through a link to {real})")
        raise OutsideFolder(f"{folder / name}: a link to {real}, outside the model folder: not read")
    return real


def open_model_file(folder: Path, name: str) -> int:
    """A descriptor on the regular file ``name`` of ``folder`` (see :func:`locate`); the caller
    closes it. ``FileNotFoundError`` passes through, for the caller to word."""
    real = locate(folder, name)
    try:
        return open_regular_file(real, follow_symlinks=False)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ModelFileError(f"{folder / name}: {os_problem(exc)}") from exc


def read_model_bytes(folder: Path, name: str, max_bytes: int) -> bytes:
    """The bytes of the regular file ``name`` of ``folder``, at most ``max_bytes``.
    ``FileNotFoundError`` passes through, for the caller to word."""
    real = locate(folder, name)
    where = folder / name
    try:
        return read_regular_file(real, max_bytes, follow_symlinks=False)
    except FileNotFoundError:
        raise
    except FileTooLarge as exc:
        raise ModelFileError(f"{where}: {exc}; not a model's file") from exc
    except OSError as exc:
        raise ModelFileError(f"{where}: {os_problem(exc)}") from exc


def read_model_json(folder: Path, name: str, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """The parsed JSON file ``name`` of ``folder``. ``FileNotFoundError`` passes through."""
    return parse_json(str(folder / name), read_model_bytes(folder, name, max_bytes))


def parse_json(where: str, data: bytes | str) -> Any:
    """JSON from an untrusted file: nesting past the parser's depth, integers too long for
    Python to convert and invalid UTF-8 become :class:`ModelFileError` naming ``where``. The
    values are still unchecked: a caller validates each one it uses."""
    try:
        return json.loads(data.decode("utf-8") if isinstance(data, bytes) else data)
    except UnicodeDecodeError as exc:
        raise ModelFileError(f"{where}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise ModelFileError(f"{where}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from exc
    except RecursionError:
        raise ModelFileError(f"{where}: JSON nested too deeply to read") from None
    except ValueError as exc:
        if "integer string conversion" in str(exc):  # Python converts at most 4300 digits
            raise ModelFileError(f"{where}: not usable JSON (an integer of more than 4300 digits)") from None
        raise ModelFileError(f"{where}: not usable JSON ({exc})") from exc
    except MemoryError:
        raise ModelFileError(f"{where}: JSON too large to hold in memory") from None


def as_size(value: Any) -> int | None:
    """``value`` when it is a whole number from 0 to 2**63 - 1 (a JSON size, count or offset);
    None for anything else (a float, ``1e400``, a string, a bool, a negative number)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_SIZE:
        return value
    return None


def describe(value: Any) -> str:
    """A short, bounded description of a JSON value for a message (never its full text: a
    hostile value can be megabytes long or nested a thousand deep)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        digits = len(str(abs(value)))
        return str(value) if digits <= 24 else f"a {digits}-digit integer"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return repr(value) if len(value) <= 80 else repr(value[:80]) + f"... ({len(value)} characters)"
    if isinstance(value, list):
        if value and len(value) <= 8 and all(isinstance(v, (int, float, str, bool)) or v is None for v in value):
            return "[" + ", ".join(describe(v) for v in value) + "]"
        return f"a list of {len(value)} item(s)"
    if isinstance(value, dict):
        return f"an object of {len(value)} key(s)"
    return type(value).__name__
