"""The stable JSON shape (``"version": 2``, documented in ``docs/json.md``) later tools build on.

Version 2 added each finding's ``outcome``, ``evidence``, ``condition`` and ``applies``, each
model's ``outcome``, ``outcome_evidence`` and ``conditions``, the ``incomplete`` status, the
launch ``options`` a run assumed, and ``models_by_outcome``."""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any, TextIO

from eagle3lint.checks.verdicts import outcome_counts, status_counts
from eagle3lint.report.concise import models_checked

if TYPE_CHECKING:
    from eagle3lint.model.result import CheckResult

SCHEMA_VERSION = 2


def result_to_json(result: CheckResult) -> dict[str, Any]:
    by_kind = Counter(m.kind for m in result.models)
    by_severity = Counter(f.severity for f in result.findings)
    by_code = Counter(f.code for f in result.findings)
    return {
        "version": SCHEMA_VERSION,
        "engine": result.engine.to_json(),
        "options": result.options.to_json() if result.options is not None else None,
        "findings": [f.to_json() for f in result.findings],
        "summary": {
            "findings": len(result.findings),
            "by_severity": dict(sorted(by_severity.items())),
            "by_code": dict(sorted(by_code.items())),
            "models": len(result.models),
            "models_by_kind": dict(sorted(by_kind.items())),
            # The verdict of each checked model (supported, broken, incomplete, ...), and what the
            # engine does with it: the classes `models` lists, counted alike.
            "models_by_status": status_counts(result.reported_models()),
            "models_by_outcome": outcome_counts(result.reported_models()),
            # What the concise summary calls "model classes checked": in scope, with a role.
            "models_checked": models_checked(result),
            "unresolved_entries": len(result.unresolved),
            "errors": len(result.errors),
            # Found but not reported: silenced by a suppression comment, or recorded in the baseline.
            "suppressed": result.suppressed,
            "baselined": result.baselined,
        },
        "models": [m.to_json() for m in result.models],
        "errors": [e.to_json() for e in result.errors],
    }


def write_json(result: CheckResult, out: TextIO, verbose: bool = False, *, quiet: bool = False) -> None:
    """One document, whatever ``verbose`` and ``quiet`` say."""
    out.write(json.dumps(result_to_json(result), indent=2))  # one write, not one per token
    out.write("\n")


def write_json_engines(results: list[CheckResult], out: TextIO) -> None:
    """Several engine trees checked in one run: one document, each engine's report (the shape
    above, whole) in ``engines``, in the order they were checked."""
    data = {"version": SCHEMA_VERSION, "engines": [result_to_json(r) for r in results]}
    out.write(json.dumps(data, indent=2))
    out.write("\n")
