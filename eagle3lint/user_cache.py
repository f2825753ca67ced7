"""The user's cache folder: released sources, libraries, the check cache when no settings file
is found, and the per-user secret that keys it. Standard library only, so every stage may ask."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """``$EAGLE3LINT_CACHE_DIR``, else ``$XDG_CACHE_HOME/eagle3lint``, else ``~/.cache/eagle3lint``."""
    explicit = os.environ.get("EAGLE3LINT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "eagle3lint"
