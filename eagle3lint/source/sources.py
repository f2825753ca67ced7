"""Reading and parsing engine files, turning every way a file can be bad into a FileError."""

from __future__ import annotations

import ast
import hashlib
import os
import re
import stat
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from eagle3lint.common.findings import FileError
from eagle3lint.common.lines import count_line_ends
from eagle3lint.source.capture_facts import CaptureSpec
from eagle3lint.source.reuse import reused_tree
from eagle3lint.source.summary import summarize
from eagle3lint.source.summary_types import ModuleSummary, ReusableUnit
from eagle3lint.source.suppressions import scan_suppressions


@dataclass(frozen=True)
class ParseRequest:
    path: str
    module: str
    is_package: bool
    walk_names: frozenset[str]
    capture: CaptureSpec | None = None
    # The summary of an earlier version of the file, made for the same walk and capture, when
    # the cache holds one: called where the file is parsed (a parse worker), to reuse what did
    # not change (``source.reuse``).
    previous: Callable[[], ModuleSummary | None] | None = field(default=None, compare=False)
    # Stores the summary made (the cache's entry), where it is made: a worker pickles it there.
    keep: Callable[[ModuleSummary], None] | None = field(default=None, compare=False)


def read_source(path: str) -> bytes | FileError:
    try:
        mode = os.stat(path).st_mode
        if stat.S_ISDIR(mode):
            return FileError(path, "is a directory, not a Python file")
        if not stat.S_ISREG(mode):
            # A named pipe or a device would block the read (or never end).
            if os.path.islink(path):
                return FileError(path, "is a symbolic link to a pipe, socket or device, not to a Python file; skipped")
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


# Syntax a newer Python accepts and the running one calls plain "invalid syntax": the first
# version that has it, and the shape of the line the error is on.
_NEWER_SYNTAX: tuple[tuple[tuple[int, int], re.Pattern[str]], ...] = (
    ((3, 12), re.compile(r"^\s*type\s+[A-Za-z_]\w*\s*[\[=]")),  # PEP 695: type X = ...
    ((3, 12), re.compile(r"^\s*(?:async\s+)?def\s+\w+\s*\[")),  # PEP 695: def f[T](...)
    ((3, 12), re.compile(r"^\s*class\s+\w+\s*\[")),  # PEP 695: class C[T]
    ((3, 13), re.compile(r"^\s*(?:type|(?:async\s+)?def|class)\s+\w+\s*\[[^\]]*=")),  # PEP 696 defaults
    ((3, 14), re.compile(r"^\s*except\*?\s+[^(\s:][^:]*,")),  # PEP 758: except A, B:
    ((3, 14), re.compile(r"(?<![\w.'\"])(?:[tT][rR]?|[rR][tT])['\"]")),  # PEP 750 template strings
)


def syntax_problem(exc: SyntaxError) -> str:
    """A syntax error as the end of "<file>: ...": where and what; and, when the line holds syntax
    a newer Python accepts, that the file may need one (the parser is the running Python's)."""
    if exc.lineno is None:  # e.g. a NUL byte: Python names no position
        problem = f"cannot be parsed: {exc.msg}"
    else:
        where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
        problem = f"syntax error at {where}: {exc.msg}"
    newer = _newer_python_for(exc)
    if newer is not None:
        running = ".".join(map(str, sys.version_info[:3]))
        problem += f"; the file may need Python {newer[0]}.{newer[1]} or newer (eagle3lint runs on Python {running})"
    return problem


def _newer_python_for(exc: SyntaxError) -> tuple[int, int] | None:
    """The newest of the versions whose syntax the line shows (``class C[T = int]`` is 3.13)."""
    running = sys.version_info[:2]
    line = exc.text or ""
    needed = [version for version, shape in _NEWER_SYNTAX if running < version and shape.search(line)]
    if running < (3, 12) and exc.msg.startswith("f-string"):
        needed.append((3, 12))  # PEP 701: quotes, backslashes and comments inside f-string fields
    return max(needed, default=None)


def parse_text(path: str, text: str) -> ast.Module | FileError:
    """The tree of a decoded source text, or its error in the index's wording (so that a file
    two readers parse is reported once)."""
    try:
        with warnings.catch_warnings():
            # Engine code is full of invalid escape sequences; they are not our findings.
            warnings.simplefilter("ignore")
            return ast.parse(text, filename=path)
    except SyntaxError as exc:
        return FileError(path, syntax_problem(exc))
    except (ValueError, RecursionError, MemoryError) as exc:
        return FileError(path, f"cannot be parsed: {type(exc).__name__}: {exc}")


def parse_file(path: str) -> ast.Module | FileError:
    """A file read (bounded), decoded and parsed; its error where any step fails."""
    data = read_source(path)
    if isinstance(data, FileError):
        return data
    text = decode_source(path, data)
    return text if isinstance(text, FileError) else parse_text(path, text)


def parse_module(request: ParseRequest) -> ModuleSummary | FileError:
    data = read_source(request.path)
    if isinstance(data, FileError):
        return data
    text = decode_source(request.path, data)
    if isinstance(text, FileError):
        return text
    try:
        summary = _reusing(request, text, request.previous) if request.previous is not None else None
        if summary is None:
            tree = parse_text(request.path, text)
            if isinstance(tree, FileError):
                return tree
            summary = summary_of(request, text, tree)
    except RecursionError:
        # Code the parser accepts can still nest deeper than a walk over it can follow; the file
        # is reported, the rest of the tree still checked.
        return FileError(request.path, "cannot be analysed: nested too deeply (recursion limit reached)")
    summary.source_digest = hashlib.sha256(data).hexdigest()
    if request.keep is not None:
        request.keep(summary)
    return summary


def _reusing(request: ParseRequest, text: str, earlier: Callable[[], ModuleSummary | None]) -> ModuleSummary | None:
    """The summary made with what an earlier version's summary offers; None when it offers
    nothing here."""
    previous = earlier()
    reused = reused_tree(text, previous, lambda masked: parse_text(request.path, masked)) if previous is not None else None
    if reused is None:
        return None
    return summary_of(request, text, reused.tree, reused.units, reused.lines)


def summary_of(
    request: ParseRequest,
    text: str,
    tree: ast.Module,
    placed: dict[str, ReusableUnit] | None = None,
    lines: list[str] | None = None,
) -> ModuleSummary:
    """The summary of a parsed text, its suppression comments included; ``placed``: the units
    standing in the tree (``source.reuse``), ``lines``: the text's where the caller has them."""
    summary = summarize(
        tree,
        module=request.module,
        path=request.path,
        is_package=request.is_package,
        walk_names=request.walk_names,
        line_count=count_line_ends(text) + 1,
        capture=request.capture,
        text=text,
        placed=placed,
        lines=lines,
    )
    summary.suppressions = scan_suppressions(text)
    return summary


@cache
def _real_folder(folder: str) -> str:
    return os.path.realpath(folder)


@cache
def tree_path(path: str) -> str:
    """Where a file lies in the tree: its folders resolved, the file itself kept when it is a
    symbolic link (to anything but a folder). Python imports a module through a link under the
    link's own name, so that is where the engine has it and where findings are reported; only
    reading the text follows the link. A link to a folder is resolved (a PATH naming one means
    the folder).

    Each folder is resolved once: hundreds of files share a handful of folders."""
    folder, name = os.path.split(os.path.abspath(path))
    if name in ("", ".", "..") or ".." in path.split(os.sep):
        # ``abspath`` would drop a ``..`` before the link it climbs out of is resolved.
        head, name = os.path.split(path)
        if name in ("", ".", "..") or not _is_file_link(path):
            return os.path.realpath(path)
        return os.path.join(os.path.realpath(head or "."), name)
    if os.path.islink(path) and os.path.isdir(path):
        return os.path.realpath(path)
    return os.path.join(_real_folder(folder), name)


def _is_file_link(path: str) -> bool:
    return os.path.islink(path) and not os.path.isdir(path)


def iter_python_files(root: Path) -> Iterator[Path]:
    """Every ``*.py`` under ``root``, sorted, a linked file among them (Python imports through
    the link), not following folder links out of the tree."""
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
