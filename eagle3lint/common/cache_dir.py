"""Where eagle3lint's user cache lives (``EAGLE3LINT_CACHE_DIR``, else ``$XDG_CACHE_HOME`` or
``~/.cache``, then ``eagle3lint``) and whether a package folder is a release unpacked in it
(split out of ``fetch.releases``, which fills it: the report, the baselines and the result cache
only ask)."""

from __future__ import annotations

import os
from pathlib import Path

_COMPLETE = ".eagle3lint-complete"


def cache_root() -> Path:
    explicit = os.environ.get("EAGLE3LINT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "eagle3lint"


def is_cached_release(root: Path) -> bool:
    """Whether the package folder ``root`` is a release unpacked in this cache."""
    folder = root.parent
    try:
        return folder.parent.resolve() == (cache_root() / "releases").resolve() and (folder / _COMPLETE).is_file()
    except OSError:
        return False
