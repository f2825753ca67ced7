"""Benchmark: support history (``models --release RANGE``) and what it fetches.

1. Bytes: what reading one vLLM release's Python files with range requests receives, against
   its wheel's size (goal: at most 15%).
2. A 10-release SGLang history, whole processes: cold (an empty release cache and analysis
   cache: the downloads included), cold with the releases already downloaded, and warm.
3. A release analysed right after its predecessor (the analysis cache holding the predecessor's
   summaries) against a cold analysis, for each adjacent pair of the history (goal: at most
   0.5x). Interleaved, medians of ``--runs``: the machine's drift hits both sides alike. Wall
   and CPU time (the process and its workers) are both shown: CPU time is the steadier one where
   others share the machine.

    python bench/bench_history.py [--vllm vllm==0.33.0] [--range 'sglang>=0.5.15,<=0.5.23'] [--runs 3]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from eagle3lint import pip_index  # noqa: E402
from eagle3lint.release_query import parse_query, select  # noqa: E402
from eagle3lint.releases import _python_sources, fetch_release, read_wheel_files  # noqa: E402


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "EAGLE3LINT_MAX_RELEASES": "64", **extra}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as an installed eagle3lint runs: from bytecode
    return env


def timed(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall time and CPU time (the process and its parse workers) of one whole run. On a
    machine others share, CPU time is the steadier measure of the work done; both are shown."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "eagle3lint", *args], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"eagle3lint {' '.join(args)} failed ({done.returncode}):\n{done.stderr.decode()[-2000:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def bench_bytes(spec: str) -> dict[str, object]:
    name, version = spec.split("==")
    with tempfile.TemporaryDirectory(prefix="eagle3lint-bench-") as tmp:
        start = time.perf_counter()
        transfer = read_wheel_files(name, version, _python_sources(name), Path(tmp) / "src")
        elapsed = time.perf_counter() - start
        files = sum(1 for _ in (Path(tmp) / "src").rglob("*.py"))
    assert transfer.size
    return {
        "release": spec,
        "wheel_mb": round(transfer.size / 1e6, 1),
        "received_mb": round(transfer.received / 1e6, 2),
        "share": round(transfer.received / transfer.size, 4),
        "requests": transfer.requests,
        "python_files": files,
        "seconds": round(elapsed, 2),
    }


def bench_history(query: str, work: Path) -> dict[str, object]:
    args = ["models", "--release", query, "--format", "json"]
    env = _env(EAGLE3LINT_CACHE_DIR=str(work / "user-cache"))
    cold, again = work / "cold", work / "cold-downloaded"
    cold.mkdir()
    again.mkdir()
    out = {"cold_with_downloads": timed(args, cold, env), "cold_releases_cached": timed(args, again, env)}
    warm = [timed(args, again, env) for _ in range(3)]
    out["warm"] = (statistics.median(w for w, _ in warm), statistics.median(c for _, c in warm))
    return {k: {"wall": round(w, 2), "cpu": round(c, 2)} for k, (w, c) in out.items()}


def bench_pair(engine: str, before: str, after: str, runs: int, work: Path) -> dict[str, object]:
    """``check`` of ``after`` with an empty analysis cache, and with one that holds ``before``'s."""
    cold, warm = [], []
    for n in range(runs):
        alone, following = work / f"{after}-alone-{n}", work / f"{after}-after-{n}"
        alone.mkdir()
        following.mkdir()
        cold.append(timed(["check", "--release", f"{engine}=={after}"], alone, _env()))
        timed(["check", "--release", f"{engine}=={before}"], following, _env())
        warm.append(timed(["check", "--release", f"{engine}=={after}"], following, _env()))
        shutil.rmtree(alone)
        shutil.rmtree(following)
    out: dict[str, object] = {"pair": f"{before} -> {after}"}
    for n, measure in enumerate(("wall", "cpu")):
        c, w = statistics.median(x[n] for x in cold), statistics.median(x[n] for x in warm)
        out[measure] = {"cold": round(c, 2), "after_predecessor": round(w, 2), "ratio": round(w / c, 2)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--vllm", default="vllm==0.33.0")
    parser.add_argument("--range", default="sglang>=0.5.15,<=0.5.23")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip", nargs="*", default=[], choices=["bytes", "history", "pairs"])
    opts = parser.parse_args()
    report: dict[str, object] = {}
    if "bytes" not in opts.skip:
        report["bytes"] = bench_bytes(opts.vllm)
        print(json.dumps(report["bytes"]), flush=True)
    query = parse_query(opts.range)
    releases = select([query], pip_index.listing(query.name).versions, prereleases=False)
    with tempfile.TemporaryDirectory(prefix="eagle3lint-bench-") as tmp:
        work = Path(tmp)
        if "history" not in opts.skip:
            report["history"] = {"releases": len(releases), **bench_history(opts.range, work)}
            print(json.dumps(report["history"]), flush=True)
        if "pairs" not in opts.skip:
            for release in releases:
                fetch_release(f"{query.name}=={release}")  # downloads stay out of the timings
            pairs = []
            for before, after in itertools.pairwise(releases):
                pairs.append(bench_pair(query.name, before, after, opts.runs, work))
                print(json.dumps(pairs[-1]), flush=True)
            summary: dict[str, object] = {"each": pairs}
            for measure in ("wall", "cpu"):
                ratios = [float(p[measure]["ratio"]) for p in pairs]  # type: ignore[index]
                summary[measure] = {"median_ratio": statistics.median(ratios), "best": min(ratios), "worst": max(ratios)}
            report["pairs"] = summary
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
