"""Is this tree as fast as a git revision? Both builds, interleaved, on real releases.

A noisy machine (a shared VM's speed drifts by a factor of two over an hour) makes figures from
different runs incomparable; runs interleaved in one session see the same conditions. For each
release: a cold ``check --no-cache`` of the models folder and a warm ``check``, by each build in
turn, ``--runs`` times; medians and this tree's ratio to the revision. The revision is checked
out into a temporary git worktree (``PYTHONPATH`` first), byte-compiled like an installed package.

    python bench/compare_speed.py --against REV [--build REV2] [--runs 5] [--release sglang==0.5.23 ...]

``--build`` measures another revision in place of this tree (e.g. a change against its parent).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from eagle3lint.fetch.releases import fetch_release  # noqa: E402

MODELS = {"sglang": "srt/models", "vllm": "model_executor/models"}
DEFAULT_RELEASES = ("sglang==0.5.23", "vllm==0.33.0")


def _env(source: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(source)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _timed(source: Path, args: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "eagle3lint", *args], cwd=cwd, env=_env(source), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{source}: eagle3lint {' '.join(args)} failed ({done.returncode}):\n{done.stderr.decode()}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", required=True, help="git revision to compare with")
    parser.add_argument("--build", help="git revision to measure instead of this tree")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--release", action="append", help="releases to measure on (repeatable)")
    args = parser.parse_args()
    releases = args.release or list(DEFAULT_RELEASES)
    with tempfile.TemporaryDirectory(prefix="eagle3lint-speed-") as tmp:
        checkouts = {args.against: Path(tmp) / "against"}
        if args.build:
            checkouts[args.build] = Path(tmp) / "build"
        for revision, folder in checkouts.items():
            added = subprocess.run(
                ["git", "-C", str(REPO), "worktree", "add", "--detach", str(folder), revision], capture_output=True, text=True
            )
            if added.returncode != 0:
                print(f"cannot check out {revision}: {added.stderr.strip()}", file=sys.stderr)
                return 2
        mine_name = args.build or "this tree"
        try:
            builds = {mine_name: checkouts[args.build] if args.build else REPO, args.against: checkouts[args.against]}
            for source in builds.values():
                subprocess.run([sys.executable, "-m", "compileall", "-q", str(source / "eagle3lint")], check=True, env=_env(source))
            for release in releases:
                models = fetch_release(release) / MODELS[release.split("==")[0]]
                times: dict[tuple[str, str], list[float]] = {}
                for name, source in builds.items():
                    project = Path(tmp) / f"project-{name.replace(' ', '-').replace('/', '-')}"
                    project.mkdir(exist_ok=True)
                    _timed(source, ["check", str(models)], project)  # fill its cache
                for _ in range(args.runs):
                    for name, source in builds.items():
                        project = Path(tmp) / f"project-{name.replace(' ', '-').replace('/', '-')}"
                        times.setdefault((name, "cold"), []).append(_timed(source, ["check", "--no-cache", str(models)], project))
                        times.setdefault((name, "warm"), []).append(_timed(source, ["check", str(models)], project))
                print(f"{release}: median of {args.runs} interleaved runs (whole processes)")
                for kind in ("cold", "warm"):
                    mine = statistics.median(times[(mine_name, kind)])
                    theirs = statistics.median(times[(args.against, kind)])
                    print(f"  check, {kind:<4}  {mine_name} {mine:.3f} s   {args.against} {theirs:.3f} s   ratio {mine / theirs:.2f}x")
        finally:
            for folder in checkouts.values():
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(folder)], capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
