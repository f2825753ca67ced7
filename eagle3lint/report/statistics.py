"""``check --statistics``: how many findings of each rule, most first, as ruff counts them.

Text: one ``COUNT<TAB>CODE<TAB>NAME`` line per rule (tab-separated, for ``cut`` and ``awk``), then
the summary line; ``--format json``: a list of ``{"code", "name", "severity", "count"}``.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any, TextIO

from eagle3lint.common.findings import SEVERITY_ORDER
from eagle3lint.report.concise import summary_line

if TYPE_CHECKING:
    from eagle3lint.model.result import CheckResult


def statistics(result: CheckResult) -> list[dict[str, Any]]:
    from eagle3lint.engines import known_rule_codes

    names = known_rule_codes()
    counts = Counter(f.code for f in result.findings)
    # A rule's findings may differ in severity (a project's overrides, the verdicts): the worst.
    worst: dict[str, str] = {}
    for finding in result.findings:
        if SEVERITY_ORDER.get(finding.severity, 3) < SEVERITY_ORDER.get(worst.get(finding.code, ""), 3):
            worst[finding.code] = finding.severity
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [{"code": code, "name": names.get(code, ""), "severity": worst.get(code), "count": n} for code, n in rows]


def write_statistics(result: CheckResult, out: TextIO, as_json: bool = False, quiet: bool = False) -> None:
    rows = statistics(result)
    if as_json:
        out.write(json.dumps(rows, indent=2) + "\n")
        return
    width = max([len(str(r["count"])) for r in rows] + [1])
    for row in rows:
        out.write(f"{row['count']:>{width}}\t{row['code']}\t{row['name']}\n")
    if not quiet:
        out.write(summary_line(result) + "\n")
