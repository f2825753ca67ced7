"""Shared test helpers: run the CLI as a user would, locate fixtures and real releases."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"


def run_cli(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    if env is None:
        # The checkout under test comes first, installed or not, whatever the cwd.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        [sys.executable, "-m", "eagle3lint", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
    )


def run_json(*args: str | Path, cwd: Path | None = None) -> tuple[int, dict[str, Any]]:
    done = run_cli(*args, "--format", "json", cwd=cwd)
    try:
        return done.returncode, json.loads(done.stdout)
    except json.JSONDecodeError as exc:  # pragma: no cover - shows the output on failure
        raise AssertionError(f"not JSON (rc={done.returncode}):\n{done.stdout}\n{done.stderr}") from exc


def release_root(spec: str) -> Path:
    """The package folder of a real release, downloaded once into the user cache."""
    from eagle3lint.releases import fetch_release

    return fetch_release(spec)


def make_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write a small engine-shaped tree (paths relative to ``root``); returns ``root``."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return root


SGLANG_SKELETON: dict[str, str | bytes] = {
    "sglang/__init__.py": "",
    "sglang/version.py": '__version__ = "9.9.9"\n',
    "sglang/srt/__init__.py": "",
    "sglang/srt/models/__init__.py": "",
}


# How many findings fixtures/sglang_basic must produce (its expected.json lists them).
BASIC_FINDINGS = len(json.loads((FIXTURES / "sglang_basic/expected.json").read_text())["findings"])
# Of those, the ones that are information: what cannot be proven (E3L006), models with no
# EAGLE-3 code (E3L020).
BASIC_INFOS = sum(
    1
    for code, _, _ in json.loads((FIXTURES / "sglang_basic/expected.json").read_text())["findings"]
    if code in ("E3L006", "E3L020")
)
BASIC_ERRORS = BASIC_FINDINGS - BASIC_INFOS
BASIC_MODELS_CHECKED = sum(
    1 for kind in json.loads((FIXTURES / "sglang_basic/expected.json").read_text())["kinds"].values() if kind != "other"
)
