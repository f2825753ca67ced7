"""Helpers for the fix tests: copy a golden fixture tree, compare trees, restyle sources."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from tests.helpers import FIXTURES, REPO, run_cli

MODELS = Path("sglang/srt/models")


def copy_before(name: str, target: Path) -> Path:
    """A private copy of ``fixtures/<name>/before``; returns its root (holding ``sglang/``)."""
    root = target / name
    shutil.copytree(FIXTURES / name / "before", root)
    return root


def golden_after(name: str) -> Path:
    return FIXTURES / name / "after"


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.py"))}


def differing(left: dict[str, bytes], right: dict[str, bytes]) -> list[str]:
    return sorted(k for k in left.keys() | right.keys() if left.get(k) != right.get(k))


def to_crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


_LEADING = re.compile(r"^((?:    )+)", re.M)


def to_tabs(text: str) -> str:
    return _LEADING.sub(lambda m: "\t" * (len(m.group(1)) // 4), text)


def run_in(cwd: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """``python -m eagle3lint ARGS`` from another working directory (diff paths are relative
    to it), with this checkout importable."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return run_cli(*args, cwd=cwd, env=env)
