"""Helpers for the fix tests: copy a golden fixture tree, compare trees, restyle sources."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
from pathlib import Path

from tests.helpers import FIXTURES, REPO, release_root, run_cli

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


def to_cr(text: str) -> str:
    """CR-only line endings (classic Mac OS): Python ends a line at a lone CR too."""
    return text.replace("\n", "\r")


_METHOD_DEF = re.compile(r"^((?:    |\t)def (?:__init__|forward|load_weights)\b)", re.M)


def to_form_feeds(text: str) -> str:
    """A form feed before each method the fixes do not add (whitespace to Python, a page break
    to some editors); the fixes never add one, so the golden files restyle the same way."""
    return _METHOD_DEF.sub("\f\\1", text)


_LEADING = re.compile(r"^((?:    )+)", re.M)


def to_tabs(text: str) -> str:
    return _LEADING.sub(lambda m: "\t" * (len(m.group(1)) // 4), text)


def run_in(cwd: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """``python -m eagle3lint ARGS`` from another working directory (diff paths are relative
    to it), with this checkout importable."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return run_cli(*args, cwd=cwd, env=env)


def apply_dry_run(spec: str, models: str, tmp_path: Path, *flags: str, all_proven: bool = False) -> list[str]:
    """Run the dry run of a real release's ``models`` folder (``sglang/srt/models``), apply its
    diff with `git apply` and `patch` to copies of that folder, and return the files it changes
    (each changed and re-parsed). ``all_proven``: no planned fix failed its proof."""
    done = run_cli("fix", "--release", spec, models, *flags)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    if all_proven:
        assert " not fixed: " not in done.stderr, done.stderr
    changed = re.findall(r"^\+\+\+ b/(\S+)$", done.stdout, re.M)
    source_root = release_root(spec).parent
    for tool, command in {"git": ["git", "apply", "--whitespace=nowarn"], "patch": ["patch", "-p1", "--quiet"]}.items():
        work = tmp_path / tool
        shutil.copytree(source_root / models, work / models)
        applied = subprocess.run(command, input=done.stdout, text=True, cwd=work, capture_output=True)
        assert applied.returncode == 0, f"{tool}: {applied.stdout}{applied.stderr}"
        for name in changed:
            path = work / name
            assert path.read_bytes() != (source_root / name).read_bytes(), name
            ast.parse(path.read_bytes(), str(path))
    return changed
