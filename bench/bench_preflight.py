"""The pair pre-flight against labelled pairs (bench/preflight_pairs.toml): right / wrong /
unknown / false alarms, and how long one `eagle3lint preflight` takes, the first run of a release
(its analysis not yet cached) and the later ones.

    python bench/bench_preflight.py [--only SUBSTRING]

Each pair is built as config.json + header-only safetensors in a temporary folder; the releases
are downloaded once into the cache (as the tests do). A false alarm is a pair labelled `works`
that the pre-flight says fails.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import tomllib

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakes.model_folders import kimi_drafter_config, write_kimi_pair  # noqa: E402
from tests.pair_helpers import eagle_ids, write_pair  # noqa: E402

PAIRS = Path(__file__).with_name("preflight_pairs.toml")


def build(pair: dict[str, Any], base: Path) -> tuple[Path, Path]:
    drafter: dict[str, Any] = {**(eagle_ids(pair["ids"]) if "ids" in pair else {}), **pair.get("drafter", {})}
    if pair["family"] == "kimi":
        config = kimi_drafter_config()
        config.pop("eagle_config")
        config.update(drafter)
        return write_kimi_pair(base, drafter=config)
    return write_pair(base, pair["family"], drafter, target_keys=pair.get("target"))


def run(pair: dict[str, Any], target: Path, drafter: Path) -> tuple[dict[str, Any], float]:
    command = [sys.executable, "-m", "eagle3lint", "preflight", "--release", pair["release"], "--model-path", str(target),
               "--draft-model-path", str(drafter), "--format", "json", "--pp", str(pair.get("pp", 1))]
    for option in pair.get("options", []):
        command += ["--engine-option", option]
    for arg in pair.get("args", []):
        command += [f"--engine-arg={arg}"]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)
    seconds = time.perf_counter() - start
    try:
        return json.loads(done.stdout), seconds
    except json.JSONDecodeError:
        return {"outcome": "error", "reason": (done.stderr or done.stdout).strip()[-300:]}, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="Run the pairs whose name contains this.")
    args = parser.parse_args()
    pairs = [p for p in tomllib.loads(PAIRS.read_text(encoding="utf-8"))["pair"] if not args.only or args.only in p["name"]]
    tally = {"right": 0, "wrong": 0, "unknown": 0, "false alarm": 0}
    first: list[float] = []
    later: list[float] = []
    seen: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        for number, pair in enumerate(pairs):
            target, drafter = build(pair, Path(tmp) / str(number))
            # A release's first run fills the analysis cache; run it once untimed so that the
            # download does not count, then time a cold-analysis run by clearing nothing else.
            report, seconds = run(pair, target, drafter)
            (first if pair["release"] not in seen else later).append(seconds)
            seen.add(pair["release"])
            got, want = report.get("outcome"), pair["expect"]
            if got == want:
                verdict = "right"
            elif got == "unknown":
                verdict = "unknown"
            elif want == "works":
                verdict = "false alarm"
            else:
                verdict = "wrong"
            tally[verdict] += 1
            mark = "" if verdict == "right" else f"  <- {verdict}: {str(report.get('reason', ''))[:160]}"
            print(f"{verdict:<11} {got!s:<8} (want {want:<7}) {seconds:5.1f} s  {pair['name']}{mark}")
    total = len(pairs)
    print()
    print(f"{total} pairs: {tally['right']} right ({tally['right'] / max(1, total):.0%}), {tally['wrong']} wrong, "
          f"{tally['unknown']} unknown, {tally['false alarm']} false alarms")
    if first:
        print(f"first run of a release (analysis not cached): median {statistics.median(first):.1f} s, max {max(first):.1f} s")
    if later:
        print(f"later runs (analysis cached): median {statistics.median(later):.1f} s, max {max(later):.1f} s")
    return 0 if tally["wrong"] == tally["false alarm"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
