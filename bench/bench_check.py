"""Benchmark: eagle3lint against ``ast.parse`` of the same files, measured in the same run.

Each measurement is a whole process (interpreter start-up included on both sides), repeated;
the script prints medians and the ratio. Usage:

    python bench/bench_check.py [--runs 5] [--release sglang==0.5.23 ...]

Each engine's models folder is its rule pack's (``models`` in ``rules/<engine>.toml``): SGLang's
``srt/models``, vLLM's ``model_executor/models``, LMDeploy's ``pytorch/models``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from eagle3lint.fetch.releases import fetch_release  # noqa: E402
from eagle3lint.source.rulepack import load_pack  # noqa: E402

PARSE_BASELINE = """
import ast, sys, warnings
warnings.simplefilter("ignore")
for path in sys.argv[1:]:
    with open(path, "rb") as handle:
        ast.parse(handle.read())
"""


def timed(command: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"command failed ({done.returncode}): {' '.join(command)}\n{done.stderr.decode()}")
    return elapsed


def peak_rss_mb(command: list[str], env: dict[str, str], cwd: Path) -> float:
    """Peak resident memory of the command's process tree (parent and its parse workers),
    measured in a fresh child so earlier runs do not count."""
    probe = (
        "import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe, *command], capture_output=True, text=True, env=env, cwd=cwd)
    return int(done.stdout.strip() or 0) / 1024


def _copy_models(package: Path, work: Path) -> Path:
    """A private copy of the release (hard links where possible), so the pre-commit scenario can
    edit a model file without touching the shared download cache."""
    target = work / package.name
    if not target.exists():
        shutil.copytree(package, target, copy_function=_link_or_copy)
    return target


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def bench_release(spec: str, runs: int, work: Path) -> dict[str, float | str | int]:
    engine = spec.split("==")[0]
    package = _copy_models(fetch_release(spec), work / spec.replace("==", "-"))
    models = package / load_pack(engine).models[0]
    files = sorted(str(p) for p in models.rglob("*.py"))
    project = work / f"project-{engine}"
    project.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # An installed eagle3lint has byte-compiled modules; so should the one measured here.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "eagle3lint")], check=True, env=env)
    base = [sys.executable, "-m", "eagle3lint"]
    cold = [*base, "check", str(models), "--no-cache"]
    warm = [*base, "check", str(models)]
    # The report that carries every finding's fix diff, answered from the cache like `warm`.
    warm_json = [*base, "check", str(models), "--format", "json"]
    fix = [*base, "fix", "--no-cache", str(models)]
    baseline = [sys.executable, "-c", PARSE_BASELINE, *files]
    has_fix = subprocess.run([*base, "fix", "--help"], capture_output=True, env=env).returncode == 0
    # The file a commit touches: the largest model file, the worst case for the hook.
    touched = max((Path(f) for f in files), key=lambda p: p.stat().st_size)
    original = touched.read_bytes()
    results: dict[str, list[float]] = {
        "parse": [], "cold": [], "warm": [], "warm_json": [], "warm_edit": [], "precommit": [], "fix": [],
    }
    timed(warm, env, cwd=project)  # fill the cache once
    timed(warm_json, env, cwd=project)
    try:
        for n in range(runs):
            results["parse"].append(timed(baseline))
            results["cold"].append(timed(cold, env, cwd=project))
            results["warm"].append(timed(warm, env, cwd=project))
            results["warm_json"].append(timed(warm_json, env, cwd=project))
            if has_fix:
                results["fix"].append(timed(fix, env, cwd=project))
            # A commit that changed one model file: the hook passes just that file...
            _replace(touched, original + f"\n# edited {n}\n".encode())
            results["precommit"].append(timed([*base, "check", str(touched)], env, cwd=project))
            # ...and the whole folder checked again with that one file changed.
            results["warm_edit"].append(timed(warm, env, cwd=project))
            _replace(touched, original)
            timed(warm, env, cwd=project)  # back to the cached state for the next round
    finally:
        _replace(touched, original)
    parse = statistics.median(results["parse"])
    med = {k: statistics.median(v) for k, v in results.items() if v}
    out: dict[str, float | str | int] = {
        "release": spec,
        "files": len(files),
        "parse_s": round(parse, 3),
        "check_cold_s": round(med["cold"], 3),
        "check_cold_ratio": round(med["cold"] / parse, 2),
        "check_warm_s": round(med["warm"], 3),
        "check_warm_ratio": round(med["warm"] / parse, 2),
        "check_warm_json_s": round(med["warm_json"], 3),
        "check_warm_json_vs_concise": round(med["warm_json"] / med["warm"], 2),
        "check_warm_one_edit_s": round(med["warm_edit"], 3),
        "check_warm_one_edit_ratio": round(med["warm_edit"] / parse, 2),
        "precommit_one_file_s": round(med["precommit"], 3),
        "check_cold_peak_rss_mb": round(peak_rss_mb(cold, env, project), 1),
    }
    if "fix" in med:
        out["fix_dry_run_s"] = round(med["fix"], 3)
        out["fix_vs_cold_check"] = round(med["fix"] / med["cold"], 2)
    return out


def _replace(path: Path, data: bytes) -> None:
    # Never write through a hard link into the shared download cache.
    tmp = path.with_suffix(".bench-tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--release", action="append", help="engine release(s) to measure")
    parser.add_argument("--json", action="store_true", help="print machine-readable results")
    args = parser.parse_args()
    releases = args.release or ["sglang==0.5.23", "vllm==0.33.0", "lmdeploy==0.18.0"]
    with tempfile.TemporaryDirectory(prefix="eagle3lint-bench-") as work:
        rows = [bench_release(spec, args.runs, Path(work)) for spec in releases]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    for row in rows:
        print(f"{row['release']}: {row['files']} model files, median of {args.runs} runs (whole processes)")
        print(f"  ast.parse baseline          {row['parse_s']:.3f} s")
        print(f"  check, cold (--no-cache)    {row['check_cold_s']:.3f} s   {row['check_cold_ratio']:.2f}x parse   peak RSS {row['check_cold_peak_rss_mb']:.0f} MB")
        print(f"  check, warm cache           {row['check_warm_s']:.3f} s   {row['check_warm_ratio']:.2f}x parse")
        print(f"  check --format json, warm   {row['check_warm_json_s']:.3f} s   {row['check_warm_json_vs_concise']:.2f}x warm concise")
        print(f"  check, warm, 1 file edited  {row['check_warm_one_edit_s']:.3f} s   {row['check_warm_one_edit_ratio']:.2f}x parse")
        print(f"  pre-commit, 1 file changed  {row['precommit_one_file_s']:.3f} s")
        if "fix_dry_run_s" in row:
            print(f"  fix, dry run (cold)         {row['fix_dry_run_s']:.3f} s   {row['fix_vs_cold_check']:.2f}x cold check")


if __name__ == "__main__":
    main()
