"""Glob patterns naming files, as ``per-file-ignores`` and ``exclude`` take them.

A pattern matches a file's path relative to the settings' folder (the configuration file's, else
the working directory) or to the working directory, or its name alone; ``fnmatch`` rules, where
``*`` crosses ``/``. ``folders=True`` (``exclude``) also lets it match a folder the file is in,
by path or name, so ``exclude = ["legacy"]`` leaves out everything under every ``legacy/``.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path, PurePosixPath

from eagle3lint.source.sources import tree_path


def _relative(path: Path, root: Path) -> str | None:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return None


def path_forms(path: str, root: Path) -> list[str]:
    """The forms of ``path`` a pattern is tried against: relative to ``root`` and to the working
    directory (where inside them), else absolute."""
    resolved = Path(tree_path(path))
    forms = [r for r in {_relative(resolved, root.resolve()), _relative(resolved, Path.cwd().resolve())} if r is not None]
    return forms or [resolved.as_posix()]


def matches(path: str, patterns: list[str] | tuple[str, ...], root: Path, folders: bool = False) -> bool:
    if not patterns:
        return False
    names = [os.path.basename(path)]
    forms = path_forms(path, root)
    if folders:
        for form in list(forms):
            parents = PurePosixPath(form).parents
            forms.extend(p.as_posix() for p in parents if p.as_posix() not in (".", "/"))
            names.extend(part for part in PurePosixPath(form).parts[:-1] if part != "/")
    candidates = {*forms, *names}
    return any(fnmatch.fnmatchcase(c, p) for p in patterns for c in candidates)
