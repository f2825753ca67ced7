"""Reading and parsing engine files, turning every way a file can be bad into a FileError."""

from __future__ import annotations

import ast
import os
import stat
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from eagle3lint.capture_facts import CaptureSpec
from eagle3lint.findings import FileError
from eagle3lint.lines import count_line_ends
from eagle3lint.summary import ModuleSummary, summarize
from eagle3lint.suppressions import scan_suppressions


@dataclass(frozen=True)
class ParseRequest:
    path: str
    module: str
    is_package: bool
    walk_names: frozenset[str]
    capture: CaptureSpec | None = None


def read_source(path: str) -> bytes | FileError:
    try:
        mode = os.stat(path).st_mode
        if stat.S_ISDIR(mode):
            return FileError(path, "is a directory, not a Python file")
        if not stat.S_ISREG(mode):
            # A named pipe or a device would block the read (or never end).
            return FileError(path, "is not a regular file (a pipe, socket or device); skipped")
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        if os.path.islink(path):
            return FileError(path, "is a broken symbolic link")
        return FileError(path, "file vanished before it could be read")
    except IsADirectoryError:
        return FileError(path, "is a directory, not a Python file")
    except PermissionError:
        return FileError(path, "cannot be read: permission denied")
    except OSError as exc:
        return FileError(path, f"cannot be read: {exc.strerror or exc}")
    except RuntimeError as exc:  # pathlib's symlink-loop error, should a caller pass one through
        return FileError(path, f"cannot be read: {exc}")


def decode_source(path: str, data: bytes) -> str | FileError:
    """Decode per PEP 263 (coding cookie or UTF-8), with a message naming the bad byte."""
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        # tokenize also lands here for undeclared non-UTF-8 bytes in the first two lines.
        if b"coding" in b"\n".join(data.split(b"\n", 2)[:2]):
            return FileError(path, f"bad encoding declaration: {exc}")
        encoding = "utf-8"
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        return FileError(
            path,
            f"not valid {encoding}: byte 0x{data[exc.start]:02x} at offset {exc.start} "
            f"({exc.reason}); save the file as UTF-8",
        )
    except LookupError:
        return FileError(path, f"unknown source encoding {encoding!r}")


def parse_module(request: ParseRequest) -> ModuleSummary | FileError:
    data = read_source(request.path)
    if isinstance(data, FileError):
        return data
    text = decode_source(request.path, data)
    if isinstance(text, FileError):
        return text
    try:
        with warnings.catch_warnings():
            # Engine code is full of invalid escape sequences; they are not our findings.
            warnings.simplefilter("ignore")
            tree = ast.parse(text, filename=request.path)
    except SyntaxError as exc:
        if exc.lineno is None:  # e.g. a NUL byte: Python names no position
            return FileError(request.path, f"cannot be parsed: {exc.msg}")
        where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
        return FileError(request.path, f"syntax error at {where}: {exc.msg}")
    except (ValueError, RecursionError, MemoryError) as exc:
        return FileError(request.path, f"cannot be parsed: {type(exc).__name__}: {exc}")
    try:
        return summary_of(request, text, tree)
    except RecursionError:
        # Code the parser accepts can still nest deeper than a walk over it can follow; the file
        # is reported, the rest of the tree still checked.
        return FileError(request.path, "cannot be analysed: nested too deeply (recursion limit reached)")


def summary_of(request: ParseRequest, text: str, tree: ast.Module) -> ModuleSummary:
    """The summary of a parsed text, its suppression comments included."""
    summary = summarize(
        tree,
        module=request.module,
        path=request.path,
        is_package=request.is_package,
        walk_names=request.walk_names,
        line_count=count_line_ends(text) + 1,
        capture=request.capture,
        text=text,
    )
    summary.suppressions = scan_suppressions(text)
    return summary


@cache
def _real_folder(folder: str) -> str:
    return os.path.realpath(folder)


@cache
def real_path(path: str) -> str:
    """``os.path.realpath``, resolving each folder once: hundreds of files share a handful of
    folders, and only the file itself can still be a link."""
    folder, name = os.path.split(os.path.abspath(path))
    if name in ("", ".", "..") or ".." in path.split(os.sep) or os.path.islink(path):
        return os.path.realpath(path)
    return os.path.join(_real_folder(folder), name)


def iter_python_files(root: Path) -> Iterator[Path]:
    """Every ``*.py`` under ``root``, sorted, not following directory links out of the tree."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                yield Path(dirpath) / name


def module_name(package_root: Path, path: Path) -> tuple[str, bool]:
    """``sglang/srt/models/llama.py`` -> ("sglang.srt.models.llama", False)."""
    rel = path.relative_to(package_root.parent).with_suffix("")
    parts = list(rel.parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package
