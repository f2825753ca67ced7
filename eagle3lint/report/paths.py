"""Paths as users want to read them: relative to the working directory when inside it,
else relative to the engine's source root (a cached release reads ``sglang/srt/...``)."""

from __future__ import annotations

import os
from pathlib import Path


def display_path(path: str, base: Path | None = None, fallback_root: Path | None = None) -> str:
    for root in (base or Path.cwd(), fallback_root):
        if root is None:
            continue
        try:
            rel = os.path.relpath(path, root)
        except ValueError:
            continue
        if not rel.startswith(".."):
            return rel
    return path


_CONTROL = {c: f"\\x{c:02x}" for c in range(32)} | {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", 127: "\\x7f"}


def line_path(path: str, base: Path | None = None, fallback_root: Path | None = None) -> str:
    """``display_path`` for a line of text: a name holding a newline or another control
    character (a hostile file name) shows it escaped, so that one finding stays one line."""
    return display_path(path, base, fallback_root).translate(_CONTROL)


def git_toplevel(path: Path) -> Path | None:
    """The work tree holding ``path`` (a ``.git`` folder, or a file in worktrees and submodules),
    found by walking up: no ``git`` process is started."""
    for folder in [path, *path.parents]:
        if (folder / ".git").exists():
            return folder
    return None


def report_base(engine_root: Path, cwd: Path | None = None) -> Path:
    """The folder CI tools want paths relative to: the repository holding the engine, else the
    working directory when the engine is inside it, else the engine's source root."""
    root = engine_root.resolve()
    top = git_toplevel(root)
    if top is not None:
        return top
    here = (cwd or Path.cwd()).resolve()
    if here == root or here in root.parents:
        return here
    return root.parent


def relative_posix(path: str, base: Path) -> str | None:
    """``path`` relative to ``base`` with ``/`` separators, or None when it lies outside."""
    from eagle3lint.sources import tree_path  # every command imports this module; few call this

    try:
        return Path(tree_path(path)).relative_to(base).as_posix()
    except ValueError:
        return None
