"""Paths as users want to read them: relative to the working directory when inside it."""

from __future__ import annotations

import os
from pathlib import Path


def display_path(path: str, base: Path | None = None) -> str:
    base = base or Path.cwd()
    try:
        rel = os.path.relpath(path, base)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel
