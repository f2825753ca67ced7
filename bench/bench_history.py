"""Benchmark: support history (``models --release RANGE``) and what it fetches.

1. Bytes: what reading one vLLM release's Python files with range requests receives, against
   its wheel's size (goal: at most 15%).
2. A 10-release SGLang history, whole processes: cold (an empty release cache and analysis
   cache: the downloads included), cold with the releases already downloaded, and warm.
3. A release analysed right after its predecessor (the analysis cache holding the predecessor's
   summaries) against a cold analysis (goal: at most 0.5x): inside one history run, each
   release's analysis with the shared summaries against the same analysis without the cache;
   and as separate ``check`` processes, for each adjacent pair. Interleaved, medians of ``--runs``: the machine's drift hits both sides alike. Wall
   and CPU time (the process and its workers) are both shown: CPU time is the steadier one where
   others share the machine. Each pair also shows the floor: ``after`` with every summary and its
   contract already stored, only linking, evaluating and reporting left (no summary cache,
   however fine-grained, makes a pair cheaper than that).

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

from eagle3lint.fetch.release_query import parse_query  # noqa: E402
from eagle3lint.fetch.releases import _python_sources, fetch_release, read_wheel_files  # noqa: E402
from eagle3lint.run.history import plan  # noqa: E402


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


INNER = """
import json, os, resource, sys, time
from eagle3lint.settings.config import Settings
from eagle3lint.run.history import run_history
from eagle3lint.fetch.release_query import parse_query

def used():
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime, time.perf_counter()

marks = []
def progress(text):
    marks.append((text, *used()))

history = run_history([parse_query(sys.argv[1])], Settings(), use_cache=sys.argv[2] == "cache", progress=progress)
out = []
for (name, cpu, wall), (_, cpu2, wall2) in zip(marks[::2], marks[1::2]):
    out.append({"release": name.split(" (")[0], "cpu": round(cpu2 - cpu, 2), "wall": round(wall2 - wall, 2)})
print(json.dumps(out))
"""


def bench_in_history(query: str, work: Path) -> dict[str, object]:
    """Each release's analysis inside one history process, with the shared summaries and
    without any cache: the ratio is what the summaries shared across releases save."""
    runs = {}
    for mode in ("cache", "no-cache"):
        cwd = work / f"inner-{mode}"
        cwd.mkdir()
        done = subprocess.run([sys.executable, "-c", INNER, query, mode], cwd=cwd, env=_env(), capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(done.stderr[-2000:])
        runs[mode] = json.loads(done.stdout.strip().splitlines()[-1])
    each = []
    for shared, alone in zip(runs["cache"], runs["no-cache"], strict=True):
        each.append({"release": shared["release"], "cpu_shared": shared["cpu"], "cpu_alone": alone["cpu"], "ratio": round(shared["cpu"] / alone["cpu"], 2)})
    later = [e["ratio"] for e in each[1:]]
    return {"each": each, "median_ratio_after_the_first": statistics.median(later) if later else None}


def bench_pair(engine: str, before: str, after: str, runs: int, work: Path) -> dict[str, object]:
    """``check`` of ``after`` with an empty analysis cache, and with one that holds ``before``'s;
    and the floor no summary cache can go below: ``after`` again with its own summaries and
    contract stored but no stored result (``--extend-select`` of a code already selected keys
    the result afresh), which is linking, evaluating and reporting alone."""
    cold, warm, floor = [], [], []
    for n in range(runs):
        alone, following = work / f"{after}-alone-{n}", work / f"{after}-after-{n}"
        for folder in (alone, following):
            folder.mkdir()
            # Each its own check cache: the default one lies in the user cache folder, which every
            # run shares (the cold run would find the summaries a previous round stored).
            (folder / "pyproject.toml").write_text('[tool.eagle3lint]\ncache-dir = ".check-cache"\n')
        cold.append(timed(["check", "--release", f"{engine}=={after}"], alone, _env()))
        floor.append(timed(["check", "--release", f"{engine}=={after}", "--extend-select", "E3L001"], alone, _env()))
        timed(["check", "--release", f"{engine}=={before}"], following, _env())
        warm.append(timed(["check", "--release", f"{engine}=={after}"], following, _env()))
        shutil.rmtree(alone)
        shutil.rmtree(following)
    out: dict[str, object] = {"pair": f"{before} -> {after}"}
    for n, measure in enumerate(("wall", "cpu")):
        c, w = statistics.median(x[n] for x in cold), statistics.median(x[n] for x in warm)
        f = statistics.median(x[n] for x in floor)
        out[measure] = {"cold": round(c, 2), "after_predecessor": round(w, 2), "ratio": round(w / c, 2), "floor": round(f, 2), "floor_ratio": round(f / c, 2)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--vllm", default="vllm==0.33.0")
    parser.add_argument("--range", default="sglang>=0.5.15,<=0.5.23")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip", nargs="*", default=[], choices=["bytes", "history", "inner", "pairs"])
    opts = parser.parse_args()
    report: dict[str, object] = {}
    if "bytes" not in opts.skip:
        report["bytes"] = bench_bytes(opts.vllm)
        print(json.dumps(report["bytes"]), flush=True)
    query = parse_query(opts.range)
    _, releases = plan([query], prereleases=False)
    with tempfile.TemporaryDirectory(prefix="eagle3lint-bench-") as tmp:
        work = Path(tmp)
        if "history" not in opts.skip:
            report["history"] = {"releases": len(releases), **bench_history(opts.range, work)}
            print(json.dumps(report["history"]), flush=True)
        if {"inner", "pairs"} - set(opts.skip):
            for release in releases:
                fetch_release(f"{query.name}=={release}")  # downloads stay out of the timings
        if "inner" not in opts.skip:
            report["in_history"] = bench_in_history(opts.range, work)
            print(json.dumps(report["in_history"]), flush=True)
        if "pairs" not in opts.skip:
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
