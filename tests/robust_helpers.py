"""Helpers of the robustness tests: the CLI under a generous time bound, output checks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import REPO, plain_environ

# Generous on a loaded two-core machine: what these runs check finishes in seconds, and before
# the fixes they ran for minutes (or forever).
TIMEOUT_S = 120


def cli_env(**extra: str) -> dict[str, str]:
    return {**plain_environ(), "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])), **extra}


def run_bounded(*args: str | Path, cwd: Path | None = None, timeout: float = TIMEOUT_S, **popen: object) -> subprocess.CompletedProcess[str]:
    """``eagle3lint ARGS`` in a subprocess, killed (and the test failed) past ``timeout``."""
    return subprocess.run(  # type: ignore[call-overload]
        [sys.executable, "-m", "eagle3lint", *map(str, args)],
        capture_output=True, text=True, cwd=cwd, env=cli_env(), timeout=timeout, **popen,
    )


def assert_clean_exit(done: subprocess.CompletedProcess[str], *codes: int) -> None:
    """An exit code the CLI documents, and no traceback (ours or a worker's)."""
    assert done.returncode in (codes or (0, 1, 2)), (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    assert "internal error" not in done.stderr, done.stderr
