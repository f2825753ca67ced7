"""Shared test helpers: run the CLI as a user would, locate fixtures and real releases."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from tests import downloads, forked_cli

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
FETCHING = "eagle3lint: fetching "  # what the CLI says when it downloads a release

# Whether the running test is marked ``release`` (set by tests/conftest.py before its fixtures).
_releases_allowed = False


def allow_releases(allowed: bool) -> None:
    global _releases_allowed
    _releases_allowed = allowed


def summary_of(stdout: str) -> str:
    """A text report's (last) summary line: the last line but the fix hint (``[*] N fixable ...``)."""
    lines = [line for line in stdout.splitlines() if "fixable with" not in line and "fixable (" not in line and "fixable:" not in line]
    return lines[-1] if lines else ""


def run_cli(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m eagle3lint ARGS``: a fork of this process where that starts the same way
    (``tests/forked_cli.py``), else a subprocess; ``EAGLE3LINT_TESTS_SUBPROCESS=1`` forces the
    latter for every run."""
    if env is None:
        # The checkout under test comes first, installed or not, whatever the cwd; a
        # FORCE_COLOR of the shell running the tests would colour the output they read.
        env = {**plain_environ(), "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    argv = list(map(str, args))
    if forked_cli.forkable(env) and not os.environ.get("EAGLE3LINT_TESTS_SUBPROCESS"):
        done = forked_cli.run_forked(argv, cwd, env, timeout=600)
    else:
        done = subprocess.run(
            [sys.executable, "-m", "eagle3lint", *argv], capture_output=True, text=True, cwd=cwd, env=env, timeout=600
        )
    served_here = env.get("PIP_INDEX_URL", "").startswith("http://127.0.0.1:")  # tests/fakes/fake_index.py
    if not served_here:
        show_downloads(done.stderr)
    if "--release" in map(str, args) and not _releases_allowed and not served_here:
        # Outside the release tests, --release is there to be refused, never to analyse (a
        # package index served by the test is no real release).
        assert done.returncode == 2, f"a test using a real release must be marked release: {args}"
    return done


def plain_environ() -> dict[str, str]:
    """This process's environment without the variables that colour the CLI's output."""
    return {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")}


def run_on_terminal(*args: str, cwd: Path) -> tuple[int, str]:
    """Run the CLI with its stdout on a pseudo-terminal (stderr piped): its exit status and what
    the terminal showed, line ends as written to a file."""
    primary, secondary = os.openpty()
    env = {**plain_environ(), "PYTHONPATH": str(REPO)}
    with subprocess.Popen([sys.executable, "-m", "eagle3lint", *args], cwd=cwd, env=env, stdout=secondary, stderr=subprocess.PIPE) as process:
        os.close(secondary)
        chunks = []
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        process.wait(timeout=120)
    os.close(primary)
    return process.returncode, b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


def show_downloads(stderr: str | bytes) -> None:
    """Each release a CLI run downloaded, said on the terminal (the run's stderr is captured)."""
    text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr
    for line in text.splitlines():
        if line.startswith(FETCHING):
            downloads.announce(line)


def run_json(*args: str | Path, cwd: Path | None = None) -> tuple[int, dict[str, Any]]:
    done = run_cli(*args, "--format", "json", cwd=cwd)
    return done.returncode, _parsed(done)


def _parsed(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(done.stdout)
    except json.JSONDecodeError as exc:  # pragma: no cover - shows the output on failure
        raise AssertionError(f"not JSON (rc={done.returncode}):\n{done.stdout}\n{done.stderr}") from exc
    return data


def release_root(spec: str) -> Path:
    """The package folder of a real release, downloaded once into the user cache (the line
    saying so reaches the terminal). Only a test marked ``release`` may ask for one."""
    from eagle3lint.fetch.releases import fetch_release

    assert _releases_allowed, f"a test using {spec} must be marked release"
    return fetch_release(spec, announce=downloads.announce)


def release_json(*args: str) -> tuple[int, dict[str, Any]]:
    """``run_json(*args)`` on a real release (``--release`` among ``args``), run once per
    process and shared by the tests that ask the same: each caller gets its own parse."""
    assert _releases_allowed, f"a test running {args} must be marked release"
    code, stdout = _shared_run(args)
    return code, json.loads(stdout)


@functools.cache
def _shared_run(args: tuple[str, ...]) -> tuple[int, str]:
    spec = args[args.index("--release") + 1]
    release_root(spec)  # fetched here, where the line is shown, not inside the CLI run
    done = run_cli(*args, "--format", "json")
    _parsed(done)  # not JSON: fail here, with the output
    return done.returncode, done.stdout


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


def read_from(label: str, root: Path, cwd: Path | None = None) -> str:
    """How a summary line names the engine tree a run read: ``sglang 0.0.1+fixture
    (./fixtures/sglang_basic/sglang)`` when the run stands above it, else its path."""
    tree, here = root.resolve(), (cwd or Path.cwd()).resolve()
    if tree == here:
        return f"{label} (.)"
    for base, prefix in ((here, "./"), (Path.home().resolve(), "~/")):
        if base in tree.parents:
            return f"{label} ({prefix}{tree.relative_to(base).as_posix()})"
    return f"{label} ({tree})"


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
# Every class given a verdict (targets, draft heads and the classes that are not targets): what
# `models` lists, the concise summary and the JSON summary count alike.
BASIC_MODELS_CHECKED = len(json.loads((FIXTURES / "sglang_basic/expected.json").read_text())["statuses"])


def load_bench_script(name: str) -> ModuleType:
    """A script of bench/ (standard library only) as a module, for tests of what it computes."""
    path = Path(__file__).resolve().parent.parent / "bench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)  # dataclasses look their module up while the body runs
    spec.loader.exec_module(module)
    return module
