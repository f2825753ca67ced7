"""The README's release table, from today's analysis: one row per release the tests use.

Runs ``eagle3lint models --format json`` and ``eagle3lint check --format json`` on each release
(downloaded into the cache on first use) and prints the Markdown rows the README's "On the
releases the tests use" table holds, so the table is regenerated, never edited by hand:

    python bench/readme_figures.py [--release sglang==0.5.9 ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter

RELEASES = ("sglang==0.5.9", "sglang==0.5.23", "vllm==0.18.0", "vllm==0.33.0", "lmdeploy==0.18.0")
NAMES = {"sglang": "SGLang", "vllm": "vLLM", "lmdeploy": "LMDeploy"}
STATUSES = ("supported", "broken", "incomplete", "not-implemented", "unknown", "not-a-target")
OUTCOMES = ("works", "crash", "silent", "refused", "unknown")


def _json(*args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "eagle3lint", *args, "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode not in (0, 1):
        raise SystemExit(f"eagle3lint {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return json.loads(done.stdout)


def row(release: str) -> str:
    engine, _, version = release.partition("==")
    models = _json("models", "--release", release, "--no-baseline")["models"]
    check = _json("check", "--release", release, "--no-baseline")
    statuses = Counter(m["status"] for m in models)
    outcomes = Counter(m["outcome"] for m in models if m["kind"] == "target" and m["status"] != "not-a-target")
    errors = sum(1 for f in check["findings"] if f["severity"] == "error")
    cells = [
        f"{NAMES[engine]} {version}",
        str(len(models)),
        *(str(statuses[s]) for s in STATUSES),
        *(str(outcomes[o]) for o in OUTCOMES),
        str(errors),
    ]
    return "| " + " | ".join(cells) + " |"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--release", action="append", help="a release (repeatable); default: the README's five")
    args = parser.parse_args()
    for release in args.release or RELEASES:
        print(row(release))
    return 0


if __name__ == "__main__":
    sys.exit(main())
