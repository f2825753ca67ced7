"""Does a change keep eagle3lint's output? Compare this tree with a git revision on real releases.

For each release, both builds run ``check --format json`` (findings with their fix diffs, model
classifications), ``contract --format json`` and ``fix`` (the dry-run diff) on the whole engine
tree, with the cache off; the outputs must be byte for byte equal. The revision is checked out
into a temporary git worktree and run from there (``PYTHONPATH`` first), so nothing is installed.

    python bench/compare_outputs.py [--against HEAD] [--release sglang==0.5.9 ...]

Exit 0 when every output is identical, 1 when one differs (a unified diff of the first lines
that differ is printed), 2 on a usage problem.
"""

from __future__ import annotations

import argparse
import difflib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from eagle3lint.fetch.releases import fetch_release  # noqa: E402

DEFAULT_RELEASES = ("sglang==0.5.9", "sglang==0.5.23", "vllm==0.18.0", "vllm==0.33.0")
COMMANDS = {
    "check.json": ["check", "--no-cache", "--format", "json"],
    "contract.json": ["contract", "--format", "json"],
    "fix.diff": ["fix", "--no-cache"],
}


def run_build(source: Path, release: str, command: list[str]) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(source)}
    done = subprocess.run(
        [sys.executable, "-m", "eagle3lint", *command, "--release", release],
        capture_output=True,
        text=True,
        env=env,
        cwd=source,
    )
    return done.returncode, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", default="HEAD", help="git revision to compare with (default: HEAD)")
    parser.add_argument("--release", action="append", help="releases to compare on (repeatable)")
    args = parser.parse_args()
    releases = args.release or list(DEFAULT_RELEASES)
    for release in releases:
        fetch_release(release)  # downloaded once, outside the timed comparisons
    differences = 0
    with tempfile.TemporaryDirectory(prefix="eagle3lint-compare-") as tmp:
        other = Path(tmp) / "other"
        added = subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(other), args.against],
            capture_output=True,
            text=True,
        )
        if added.returncode != 0:
            print(f"compare_outputs: cannot check out {args.against}: {added.stderr.strip()}", file=sys.stderr)
            return 2
        try:
            for release in releases:
                for name, command in COMMANDS.items():
                    mine = run_build(REPO, release, command)
                    theirs = run_build(other, release, command)
                    if mine == theirs:
                        print(f"{release:<16} {name:<14} identical ({len(mine[1].splitlines())} lines, exit {mine[0]})")
                        continue
                    differences += 1
                    print(f"{release:<16} {name:<14} DIFFERS (exit {theirs[0]} -> {mine[0]})")
                    diff = difflib.unified_diff(
                        theirs[1].splitlines(), mine[1].splitlines(), f"{args.against}/{name}", f"worktree/{name}", lineterm="", n=2
                    )
                    for line in list(diff)[:60]:
                        print("    " + line)
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(other)], capture_output=True)
    print("every output identical" if not differences else f"{differences} output(s) differ")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
