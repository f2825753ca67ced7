"""Driving `verify` against the fake engine server in tests: options, the fake's record, leftovers."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

from eagle3lint.verify.launch import MARKER_ENV
from eagle3lint.verify.options import VerifyOptions
from eagle3lint.verify.teardown import pid_alive
from tests.fakes.model_folders import write_kimi_pair

FAKE = Path(__file__).resolve().parent / "fake_engine_server.py"

# What every wait of a verify run against the fake may take: the fake does each step in a few
# hundredths of a second, a loaded two-core machine in a few seconds.
GENEROUS_S = 120.0

# Four prompts at concurrency 1 and 4 keep a measured run well under a second.
TEST_PROMPTS = ["Say hello.", "Count to five.", "Name a colour.", "What is 2 + 2?"]


def fake_launcher(engine: str, state_file: Path, *flags: str) -> str:
    return shlex.join([sys.executable, str(FAKE), "--fake-engine", engine, "--fake-state-file", str(state_file), "--fake-tokens-per-s", "400", "--fake-load-seconds", "0.02", *flags])


def make_options(tmp_path: Path, engine: str = "sglang", *flags: str, **overrides: Any) -> VerifyOptions:
    """Options for a run of the fake with the Kimi-K2.5 sample models: quick polls, and bounds
    no loaded machine comes near (each wait ends as soon as its condition holds; a test that
    needs a wait to run out makes it leap with ``tests.fakes.clock``)."""
    target, drafter = write_kimi_pair(tmp_path / "models")
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("\n".join(TEST_PROMPTS) + "\n")
    values: dict[str, Any] = {
        "model_path": str(target),
        "draft_model_path": str(drafter),
        "engine": engine,
        "launcher": fake_launcher(engine, state_path(tmp_path), *flags),
        "prompts_file": prompts,
        "max_new_tokens": 16,
        "concurrency": (1, 4),
        "log_dir": tmp_path / "logs",
        "poll_interval_s": 0.05,
        "teardown_grace_s": GENEROUS_S,
        "teardown_timeout_s": GENEROUS_S,
        "timeout_s": GENEROUS_S,
        "request_timeout_s": GENEROUS_S,
    }
    values.update(overrides)
    return VerifyOptions(**values)


def state_path(tmp_path: Path) -> Path:
    return tmp_path / "fake-state.jsonl"


def read_state(tmp_path: Path) -> list[dict[str, Any]]:
    path = state_path(tmp_path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def events(tmp_path: Path, name: str) -> list[dict[str, Any]]:
    return [e for e in read_state(tmp_path) if e["event"] == name]


def fake_pids(tmp_path: Path) -> list[int]:
    """Every process the fake started: servers and their children."""
    pids = []
    for event in read_state(tmp_path):
        if event["event"] in ("started", "child-running"):
            pids.append(event["pid"])
    return pids


def alive(pids: list[int]) -> list[int]:
    return [pid for pid in pids if pid_alive(pid)]


def marked_alive(tmp_path: Path) -> list[int]:
    """Live processes of this user carrying any verify marker that a run of this test started
    (its fake servers name the test's state file): tests running beside it (xdist) have their own."""
    proc = Path("/proc")
    found = []
    needle = (MARKER_ENV + "=").encode()
    mine = str(state_path(tmp_path)).encode()
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if mine in cmdline and any(part.startswith(needle) for part in environ.split(b"\0")) and pid_alive(int(entry.name)):
            found.append(int(entry.name))
    return found
