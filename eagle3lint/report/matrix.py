"""``eagle3lint models``: the EAGLE-3 support matrix, one row per model class, with its verdict.

Formats: a readable table, JSON (``"version": 1``), and Markdown (a page an engine's docs could
publish, generated from the source).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from eagle3lint import __version__
from eagle3lint.report.paths import display_path
from eagle3lint.verdicts import STATUSES, status_counts

if TYPE_CHECKING:
    from eagle3lint.findings import Finding
    from eagle3lint.models import ModelClass
    from eagle3lint.result import CheckResult

SCHEMA_VERSION = 1
_WEAKEST = ("display-only", "unsafe", "safe")  # a model's fix is as safe as its least safe part


@dataclass
class Row:
    model: ModelClass
    path: str  # as shown: relative to the working directory or the engine's source root
    codes: list[str]
    fix: str | None  # "safe" | "unsafe" | "display-only" | None (no fix)

    def to_json(self) -> dict[str, Any]:
        m = self.model
        return {
            "class": m.ref.qualname,
            "architectures": m.architectures,
            "path": self.path,
            "line": m.summary.lineno,
            "kind": m.kind,
            "variant": m.variant,
            "status": m.status,
            "reason": m.status_reason,
            "codes": self.codes,
            "fix": {"applicability": self.fix} if self.fix else None,
            **({"origin": m.origin} if m.origin else {}),
        }


def model_fix(findings: list[Finding]) -> str | None:
    """The applicability of a model's fix: every finding on it must have one (all or nothing);
    the least safe part decides. None when none has a fix."""
    fixes = [f.fix for f in findings]
    present = [fix for fix in fixes if fix is not None and fix.diff]
    if not present:
        return None
    if len(present) < len(fixes):
        return "display-only"
    return min((fix.applicability for fix in present), key=_WEAKEST.index)


def rows(result: CheckResult) -> list[Row]:
    """The checked models (those with a verdict), most urgent status first."""
    by_model: dict[tuple[str, str | None], list[Finding]] = {}
    for finding in result.findings:
        if finding.code != "E3L900":
            by_model.setdefault((finding.qualname, finding.variant), []).append(finding)
    root = result.engine.source_root
    out = []
    for model in result.models:
        if not model.status:
            continue
        own = by_model.get((f"{model.ref.module}.{model.ref.qualname}", model.variant), [])
        codes = sorted({f.code for f in own})
        out.append(Row(model, display_path(model.path, fallback_root=root), codes, model_fix(own)))
    order = {status: n for n, status in enumerate(_BROKEN_FIRST)}
    out.sort(key=lambda r: (order.get(r.model.status, len(order)), r.model.ref.qualname.lower(), r.model.variant or ""))
    return out


_BROKEN_FIRST = ("broken", "unknown", "supported", "not-implemented", "not-a-target")


def summary_line(result: CheckResult, table: list[Row]) -> str:
    counts = status_counts([r.model for r in table])
    parts = [f"{n} {status}" for status, n in counts.items() if n]
    engine = result.engine
    total = len(table)
    return f"{engine.label}: {total} model class{'es' if total != 1 else ''}: " + (", ".join(parts) or "none")


def _name(row: Row) -> str:
    variant = f" [{row.model.variant}]" if row.model.variant else ""
    return f"{row.model.ref.qualname}{variant}"


def write_table(result: CheckResult, out: TextIO) -> None:
    table = rows(result)
    width = max([len(_name(r)) for r in table] + [5])
    out.write(f"{'status':<16} {'class':<{width}} {'fix':<12} {'codes':<14} where / why\n")
    for row in table:
        codes = ",".join(row.codes) or "-"
        where = f"{row.path}:{row.model.summary.lineno}"
        origin = f" [{row.model.origin}]" if row.model.origin else ""
        out.write(f"{row.model.status:<16} {_name(row):<{width}} {row.fix or '-':<12} {codes:<14} {where}: {row.model.status_reason}{origin}\n")
    out.write(summary_line(result, table) + "\n")


def write_json(result: CheckResult, out: TextIO) -> None:
    table = rows(result)
    data = {
        "version": SCHEMA_VERSION,
        "engine": result.engine.to_json(),
        "models": [r.to_json() for r in table],
        "summary": {"models": len(table), "by_status": status_counts([r.model for r in table])},
        "errors": [e.to_json() for e in result.errors],
    }
    out.write(json.dumps(data, indent=2))
    out.write("\n")


_STATUS_WORDS = {
    "supported": "supported",
    "broken": "broken",
    "not-implemented": "not implemented",
    "unknown": "not provable statically",
    "not-a-target": "not a target",
}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def write_markdown(result: CheckResult, out: TextIO) -> None:
    table = [r for r in rows(result) if r.model.status != "not-a-target"]
    engine = result.engine
    counts = status_counts([r.model for r in table])
    out.write(f"# EAGLE-3 support in {engine.label}\n\n")
    out.write(
        f"Generated by eagle3lint {__version__} from the engine's source (static analysis: a "
        "supported model has the whole EAGLE-3 interface; whether a drafter is accepted is for "
        "`eagle3lint verify` to measure). Draft heads and models that are not generative "
        "targets are left out.\n\n"
    )
    out.write(", ".join(f"{n} {_STATUS_WORDS[s]}" for s, n in counts.items() if n and s != "not-a-target") + ".\n\n")
    out.write("| Architecture | Class | Status | Fix | Notes |\n| --- | --- | --- | --- | --- |\n")
    for row in sorted(table, key=lambda r: (STATUSES.index(r.model.status), (r.model.architectures or [r.model.ref.qualname])[0].lower())):
        m = row.model
        arch = ", ".join(m.architectures) or m.ref.qualname
        variant = f" ({m.variant})" if m.variant else ""
        notes = "" if m.status == "supported" and not row.codes else m.status_reason
        notes = f"{notes} ({m.origin})" if m.origin and notes else notes or m.origin
        fix = {"safe": "automatic", "unsafe": "automatic (unsafe)", "display-only": "suggested"}.get(row.fix or "", "")
        out.write(
            f"| {_cell(arch)} | `{m.ref.qualname}`{variant} ({_cell(row.path)}) | {_STATUS_WORDS[m.status]} | {fix} | {_cell(notes)} |\n"
        )
