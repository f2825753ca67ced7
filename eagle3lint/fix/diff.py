"""Unified diffs that ``patch -p0`` and ``git apply -p0`` accept, run from the folder the paths
are relative to (the working directory when the file is under it, else the engine's source
root, e.g. the folder holding ``sglang/``)."""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

from eagle3lint.sources import tree_path

_LINE = re.compile(r"[^\n]*\n|[^\n]+$")
NO_NEWLINE = "\\ No newline at end of file\n"


def split_lines(text: str) -> list[str]:
    """Lines with their endings; only ``\\n`` ends a line (``str.splitlines`` would also split
    on form feeds and other separators that ``patch`` does not treat as line ends)."""
    return _LINE.findall(text)


def diff_base(path: str, source_root: Path) -> Path:
    cwd = Path.cwd().resolve()
    resolved = Path(tree_path(path))
    if cwd == resolved.parent or cwd in resolved.parents:
        return cwd
    return source_root.resolve()


def diff_label(path: str, source_root: Path) -> str:
    resolved = Path(tree_path(path))
    base = diff_base(path, source_root)
    try:
        return Path(os.path.relpath(resolved, base)).as_posix()
    except ValueError:
        return resolved.as_posix()


def unified_diff(old: str, new: str, label: str, context: int = 3) -> str:
    if old == new:
        return ""
    out: list[str] = []
    for line in difflib.unified_diff(split_lines(old), split_lines(new), label, label, n=context, lineterm="\n"):
        out.append(line if line.endswith("\n") else line + "\n" + NO_NEWLINE)
    return "".join(out)
