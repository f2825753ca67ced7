"""Run one test many times under xdist, as the quick loop does, and count its failures.

    python bench/stress_flaky.py [--runs 60] [--workers 2] [TEST_ID]

Made for issue 27's item 7 (`test_a_crash_while_measuring_is_classified` read a crash as "ready"
about one run in nine: the client saw the dying server's sockets close before ``poll()`` saw the
exit). Not part of CI: it takes a minute and wants a loaded machine to show a race.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = "tests/test_verify_run.py::test_a_crash_while_measuring_is_classified"


def pytest_generate_tests(metafunc: Any) -> None:
    """Loaded into pytest with `-p bench.stress_flaky`: each test runs STRESS_COPIES times."""
    copies = int(os.environ.get("STRESS_COPIES", "0"))
    if copies > 1:
        metafunc.fixturenames.append("stress_copy")
        metafunc.parametrize("stress_copy", range(copies))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("test", nargs="?", default=DEFAULT)
    parser.add_argument(
        "--runs", type=int, default=60, help="copies of the test in one xdist session"
    )
    parser.add_argument("--workers", default="2", help="xdist's -n")
    args = parser.parse_args()
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
        "-p",
        "bench.stress_flaky",
        "-n",
        args.workers,
        args.test,
    ]
    env = {**os.environ, "STRESS_COPIES": str(args.runs)}
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env)
    tail = done.stdout.strip().splitlines()[-1:] or [done.stderr.strip()]
    print(f"{args.test} x{args.runs} (-n {args.workers}): {tail[0]}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
