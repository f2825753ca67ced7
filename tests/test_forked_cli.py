"""The suite runs the CLI in a fork of the test process (tests/forked_cli.py): it must answer
exactly as ``python -m eagle3lint`` does, and leave the test process as it was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import forked_cli
from tests.helpers import FIXTURES, REPO


def _subprocess(args: list[str], cwd: Path | None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "eagle3lint", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=600
    )


@pytest.mark.parametrize(
    "args",
    [
        ["check", "--no-cache", "--format", "json", str(FIXTURES / "sglang_capture")],
        ["check", "--no-cache", str(FIXTURES / "vllm_modern")],
        ["fix", "--no-cache", str(FIXTURES / "fix_wrapper" / "before")],
        ["check", "--format", "nonsense", "."],
        ["check", "/nonexistent/eagle3lint/path"],
    ],
)
def test_a_forked_run_answers_as_a_fresh_interpreter(args: list[str], tmp_path: Path) -> None:
    real = _subprocess(args, tmp_path)
    forked = forked_cli.run_forked(args, tmp_path, dict(os.environ), timeout=600)
    assert (forked.returncode, forked.stdout, forked.stderr) == (real.returncode, real.stdout, real.stderr)


def test_a_forked_run_leaves_the_test_process_as_it_was(tmp_path: Path) -> None:
    forked_cli._preloaded()
    cwd, environ, modules = os.getcwd(), dict(os.environ), set(sys.modules)
    env = {**os.environ, "EAGLE3LINT_CACHE_DIR": str(tmp_path / "cache")}
    done = forked_cli.run_forked(["check", str(FIXTURES / "sglang_basic")], tmp_path, env, timeout=600)
    assert done.returncode == 1, done.stderr
    # The child's working directory, environment and imports were its own.
    assert (os.getcwd(), dict(os.environ), set(sys.modules)) == (cwd, environ, modules)


def test_an_environment_that_changes_start_up_goes_to_a_subprocess(tmp_path: Path) -> None:
    assert forked_cli.forkable(dict(os.environ))
    assert not forked_cli.forkable({**os.environ, "PYTHONHASHSEED": "123"})
    assert not forked_cli.forkable({**os.environ, "PYTHONPATH": str(tmp_path)})
    assert forked_cli.forkable({**os.environ, "PYTHONPATH": str(REPO), "EAGLE3LINT_CACHE_DIR": str(tmp_path)})
