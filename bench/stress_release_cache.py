"""Stress the release cache's races (robustness round 4, R4-15 and R4-17), outside CI: timing decides
what each round exercises, so this is a script to run by hand, not a test.

    python bench/stress_release_cache.py evict [--rounds 5]   # R4-17: eviction beside a live run
    python bench/stress_release_cache.py kill [--rounds 5]    # R4-15: a fetch killed outright

``evict`` copies two cached releases into a private cache bounded to one release, starts a dry-run
``fix --release`` on one and, a moment later, a ``check --release`` of the other (whose fetch evicts
the least recently used entry); the ``fix`` summary must equal a lone run's. ``kill`` sends SIGKILL
to a fetch into an empty cache at a random moment, fetches again, and checks that no staging folder
is left. Both need the network (``kill``) or the releases in the user cache (``evict``).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HELD, OTHER = "vllm==0.33.0", "sglang==0.5.9"


def _cli(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "eagle3lint", *args], env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, "EAGLE3LINT_CACHE_DIR": str(cache), "EAGLE3LINT_MAX_RELEASES": "1"}


def evict(rounds: int) -> int:
    from eagle3lint.common.cache_dir import cache_root
    from eagle3lint.fetch.releases import fetch_release

    fetch_release(HELD)
    lone = _cli("fix", "--release", HELD, env={**os.environ}).communicate()[1].strip().splitlines()[-1]
    bad = 0
    for number in range(rounds):
        with tempfile.TemporaryDirectory(prefix="eagle3lint-stress-") as tmp:
            releases = Path(tmp) / "releases"
            releases.mkdir()
            name = HELD.replace("==", "-")
            shutil.copytree(cache_root() / "releases" / name, releases / name)
            fix = _cli("fix", "--release", HELD, env=_env(Path(tmp)))
            time.sleep(random.uniform(0.2, 0.8))
            check = _cli("check", "--release", OTHER, env=_env(Path(tmp)))
            summary = fix.communicate()[1].strip().splitlines()[-1]
            check.communicate()
            same = summary == lone
            bad += not same
            print(f"round {number}: {'same' if same else 'DIFFERENT'}: {summary}")
    return 1 if bad else 0


def kill(rounds: int) -> int:
    bad = 0
    for number in range(rounds):
        with tempfile.TemporaryDirectory(prefix="eagle3lint-stress-") as tmp:
            run = _cli("check", "--release", HELD, env=_env(Path(tmp)))
            time.sleep(random.uniform(0.5, 5.0))
            run.send_signal(signal.SIGKILL)
            run.communicate()
            _cli("check", "--release", HELD, env=_env(Path(tmp))).communicate()
            left = [p.name for p in (Path(tmp) / "releases").iterdir() if p.name.startswith(".download-")]
            bad += bool(left)
            print(f"round {number}: {'staging left: ' + ', '.join(left) if left else 'clean'}")
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("race", choices=["evict", "kill"])
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    return evict(options.rounds) if options.race == "evict" else kill(options.rounds)


if __name__ == "__main__":
    sys.exit(main())
