"""Paths as users want to read them: relative to the working directory when inside it,
else relative to the engine's source root (a cached release reads ``sglang/srt/...``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from eagle3lint.common.escape import display_path, line_path, line_text  # noqa: F401 - shown here too

if TYPE_CHECKING:
    from eagle3lint.source.engine import Engine


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
    from eagle3lint.source.sources import (
        tree_path,  # every command imports this module; few call this
    )

    try:
        return Path(tree_path(path)).relative_to(base).as_posix()
    except ValueError:
        return None


def tree_where(root: Path, cwd: Path | None = None) -> str:
    """Which engine tree a run read, short enough for a summary line: ``./python/sglang`` (``.``)
    inside the working directory, ``release`` for a published release in the cache, else its
    path (``~/`` for the home folder): a run on the installed package when the user meant the
    checkout they stand in shows at a glance."""
    from eagle3lint.common.cache_dir import is_cached_release

    if is_cached_release(root):
        return "release"
    try:
        here = cwd or Path.cwd()
    except OSError:  # the working directory was removed
        here = None
    try:
        rel = os.path.relpath(root, here) if here is not None else ".."
    except ValueError:  # another drive
        rel = ".."
    if rel == ".":
        return "."
    if not rel.startswith(".."):
        return f"./{Path(rel).as_posix()}"
    try:
        return f"~/{root.relative_to(Path.home()).as_posix()}"
    except (ValueError, RuntimeError):  # elsewhere, or no home folder
        return str(root)


def engine_label(engine: Engine) -> str:
    """The engine's label and the tree read, for a summary line (text from the tree escaped)."""
    return line_text(engine.label_at(tree_where(engine.root)))
