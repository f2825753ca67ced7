"""Baselines: adopt eagle3lint on a fork with old findings and fail only on new ones.

A finding is keyed by (path, qualname, member, code) — never by line, so edits elsewhere in a
file do not break the baseline. Paths are stored relative to the engine's source root, so a
baseline written in one checkout works in another.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from pathlib import Path

from eagle3lint import __version__
from eagle3lint.engine import Engine
from eagle3lint.errors import UsageError
from eagle3lint.findings import Finding

BASELINE_VERSION = 1
Key = tuple[str, str, str, str]


def _relative(path: str, engine: Engine) -> str:
    try:
        return Path(path).resolve().relative_to(engine.source_root.resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()


def finding_key(finding: Finding, engine: Engine) -> Key:
    return (_relative(finding.path, engine), finding.qualname, finding.method, finding.code)


def write_baseline(path: Path, findings: list[Finding], engine: Engine) -> int:
    counts = Counter(finding_key(f, engine) for f in findings)
    entries = [
        {"path": p, "qualname": q, "member": m, "code": c, "count": n}
        for (p, q, m, c), n in sorted(counts.items())
    ]
    data = {"version": BASELINE_VERSION, "tool": f"eagle3lint {__version__}", "engine": engine.name, "findings": entries}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2)
        handle.write("\n")
    os.replace(tmp, path)
    return len(findings)


def read_baseline(path: Path) -> Counter[Key]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"baseline {path}: no such file (create it with --write-baseline)") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"baseline {path}: not a readable eagle3lint baseline: {exc}") from exc
    if not isinstance(data, dict) or data.get("version") != BASELINE_VERSION or not isinstance(data.get("findings"), list):
        raise UsageError(f"baseline {path}: not an eagle3lint baseline (version {BASELINE_VERSION})")
    counts: Counter[Key] = Counter()
    for entry in data["findings"]:
        try:
            key = (entry["path"], entry["qualname"], entry["member"], entry["code"])
            counts[key] += int(entry.get("count", 1))
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"baseline {path}: malformed entry {entry!r}") from exc
    return counts


def filter_new(findings: list[Finding], baseline: Counter[Key], engine: Engine) -> tuple[list[Finding], int]:
    """The findings not covered by the baseline, and how many were."""
    remaining = Counter(baseline)
    new: list[Finding] = []
    known = 0
    for finding in findings:
        key = finding_key(finding, engine)
        if remaining[key] > 0:
            remaining[key] -= 1
            known += 1
        else:
            new.append(finding)
    return new, known
