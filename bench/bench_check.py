"""Benchmark: eagle3lint against ``ast.parse`` of the same files, measured in the same run.

Each measurement is a whole process (interpreter start-up included on both sides), repeated;
the script prints medians and the ratio. Usage:

    python bench/bench_check.py [--runs 5] [--release sglang==0.5.23 ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from eagle3lint.releases import fetch_release  # noqa: E402

MODELS = {"sglang": "srt/models", "vllm": "model_executor/models"}

PARSE_BASELINE = """
import ast, sys, warnings
warnings.simplefilter("ignore")
for path in sys.argv[1:]:
    with open(path, "rb") as handle:
        ast.parse(handle.read())
"""


def timed(command: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"command failed ({done.returncode}): {' '.join(command)}\n{done.stderr.decode()}")
    return elapsed


def peak_rss_mb(command: list[str], env: dict[str, str] | None = None) -> float:
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(before, after) / 1024


def bench_release(spec: str, runs: int) -> dict[str, float | str | int]:
    package = fetch_release(spec)
    engine = spec.split("==")[0]
    models = package / MODELS[engine]
    files = sorted(str(p) for p in models.rglob("*.py"))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    check = [sys.executable, "-m", "eagle3lint", "check", str(models), "--format", "json"]
    fix = [sys.executable, "-m", "eagle3lint", "fix", str(models)]
    baseline = [sys.executable, "-c", PARSE_BASELINE, *files]
    results: dict[str, list[float]] = {"parse": [], "check": [], "fix": []}
    has_fix = subprocess.run([sys.executable, "-m", "eagle3lint", "fix", "--help"], capture_output=True, env=env).returncode == 0
    for _ in range(runs):
        results["parse"].append(timed(baseline))
        results["check"].append(timed(check, env))
        if has_fix:
            results["fix"].append(timed(fix, env))
    parse = statistics.median(results["parse"])
    out: dict[str, float | str | int] = {
        "release": spec,
        "files": len(files),
        "parse_s": round(parse, 3),
        "check_cold_s": round(statistics.median(results["check"]), 3),
        "check_ratio": round(statistics.median(results["check"]) / parse, 2),
        "check_peak_rss_mb": round(peak_rss_mb(check, env), 1),
    }
    if results["fix"]:
        out["fix_dry_run_s"] = round(statistics.median(results["fix"]), 3)
        out["fix_vs_check"] = round(statistics.median(results["fix"]) / statistics.median(results["check"]), 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--release", action="append", help="engine release(s) to measure")
    parser.add_argument("--json", action="store_true", help="print machine-readable results")
    args = parser.parse_args()
    releases = args.release or ["sglang==0.5.23", "vllm==0.33.0"]
    rows = [bench_release(spec, args.runs) for spec in releases]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    for row in rows:
        print(f"{row['release']}: {row['files']} model files, median of {args.runs} runs (whole processes)")
        print(f"  ast.parse baseline     {row['parse_s']:.3f} s")
        print(f"  check (cold)           {row['check_cold_s']:.3f} s   ratio {row['check_ratio']:.2f}x   peak RSS {row['check_peak_rss_mb']:.0f} MB")
        if "fix_dry_run_s" in row:
            print(f"  fix (dry run)          {row['fix_dry_run_s']:.3f} s   {row['fix_vs_check']:.2f}x cold check")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory():
        main()
