"""Benchmark: `eagle3lint fix` (dry run) against a cold `eagle3lint check` of the same folder.

Each measurement is a whole process (interpreter start-up included on both sides), repeated
and interleaved; the script prints medians and the ratio (the goal is at most 2x). Usage:

    python bench/bench_fix.py [--runs 5] [--release sglang==0.5.23] [--unsafe-fixes]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODELS = {"sglang": "sglang/srt/models", "vllm": "vllm/model_executor/models"}


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"command failed ({done.returncode}): {' '.join(command)}\n{done.stderr.decode()}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--release", default="sglang==0.5.23")
    parser.add_argument("--unsafe-fixes", action="store_true")
    args = parser.parse_args()
    engine = args.release.split("==")[0]
    base = [sys.executable, "-m", "eagle3lint"]
    # Both cold: the cache would answer a repeated check from its stored result.
    check = [*base, "check", "--no-cache", "--release", args.release, MODELS[engine]]
    fix = [*base, "fix", "--no-cache", "--release", args.release, MODELS[engine], *(["--unsafe-fixes"] if args.unsafe_fixes else [])]
    timed(check)  # the release is downloaded and the OS file cache warm before measuring
    checks, fixes = [], []
    for _ in range(args.runs):
        checks.append(timed(check))
        fixes.append(timed(fix))
    result = {
        "release": args.release,
        "runs": args.runs,
        "check_s": round(statistics.median(checks), 2),
        "fix_dry_run_s": round(statistics.median(fixes), 2),
        "ratio": round(statistics.median(fixes) / statistics.median(checks), 2),
        "unsafe_fixes": args.unsafe_fixes,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
