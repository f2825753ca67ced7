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
