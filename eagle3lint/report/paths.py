"""Paths as users want to read them: relative to the working directory when inside it,
else relative to the engine's source root (a cached release reads ``sglang/srt/...``)."""

from __future__ import annotations

from pathlib import Path

from eagle3lint.escape import display_path, line_path, line_text  # noqa: F401 - shown here too


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
