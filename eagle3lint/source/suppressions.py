"""Suppression comments: ``# noqa: E3L001``, ``# eagle3lint: ignore[E3L001]``, and
``# eagle3lint: ignore-file``.

A bare ``# noqa`` (no codes) is deliberately *not* honoured: engine code is full of bare noqa
comments aimed at flake8, and a blanket one on a model class would silently hide a start-up
crash. ``# eagle3lint: ignore`` without codes is the explicit blanket form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from eagle3lint.common.findings import Finding
from eagle3lint.common.lines import count_line_ends, line_texts

_NOQA_RE = re.compile(r"#\s*noqa\s*:\s*(?P<codes>[A-Z][A-Z0-9]*(?:[\s,]+[A-Z][A-Z0-9]*\b)*)", re.I)
_IGNORE_RE = re.compile(r"#\s*eagle3lint\s*:\s*ignore(?:\[(?P<codes>[^\]]*)\])?(?![-\w])", re.I)
# At the start of any line: after a lone CR too (a CR-only file is not one long line).
_IGNORE_FILE_RE = re.compile(r"(?:^|(?<=\r))\s*#\s*eagle3lint\s*:\s*ignore-file\b", re.I | re.M)


@dataclass(frozen=True)
class Suppression:
    line: int
    column: int
    codes: tuple[str, ...] | None  # None: every eagle3lint code
    text: str


@dataclass
class FileSuppressions:
    ignore_file_line: int = 0  # 0: none
    comments: list[Suppression] = field(default_factory=list)


def scan_suppressions(text: str) -> FileSuppressions:
    """Suppression comments of one file (only eagle3lint codes count in a noqa list)."""
    found = FileSuppressions()
    if "noqa" not in text and "eagle3lint" not in text:
        return found
    file_match = _IGNORE_FILE_RE.search(text)
    if file_match:
        found.ignore_file_line = count_line_ends(text, 0, file_match.start()) + 1
    for number, line in enumerate(line_texts(text), start=1):
        if "#" not in line:
            continue
        for match in _NOQA_RE.finditer(line):
            codes = tuple(c.upper() for c in re.split(r"[\s,]+", match["codes"]) if c)
            ours = tuple(c for c in codes if c.startswith("E3L"))
            if ours:
                found.comments.append(Suppression(number, match.start() + 1, ours, match.group(0)))
        for match in _IGNORE_RE.finditer(line):
            raw = match["codes"]
            codes_or_all = tuple(c.strip().upper() for c in raw.split(",") if c.strip()) if raw else None
            found.comments.append(Suppression(number, match.start() + 1, codes_or_all, match.group(0)))
    return found


@dataclass
class SuppressionOutcome:
    kept: list[Finding]
    suppressed: list[Finding]
    # (path, suppression) pairs that matched at least one finding.
    used: set[tuple[str, Suppression]]


def apply_suppressions(
    findings: list[Finding],
    per_file: dict[str, FileSuppressions],
    class_lines: dict[str, tuple[str, int]],
) -> SuppressionOutcome:
    """Drop findings suppressed on their own line, on their model class's line, or file-wide.

    ``class_lines`` maps a finding's qualname to the (path, line) of the model class, so a
    finding reported on a base method can also be silenced where the model is declared.
    """
    kept: list[Finding] = []
    suppressed: list[Finding] = []
    used: set[tuple[str, Suppression]] = set()
    for finding in findings:
        places = [(finding.path, finding.line)]
        declared = class_lines.get(finding.qualname)
        if declared and declared != places[0]:
            places.append(declared)
        hit = False
        for path, line in places:
            entry = per_file.get(path)
            if entry is None:
                continue
            if entry.ignore_file_line:
                hit = True
                break
            for comment in entry.comments:
                if comment.line == line and (comment.codes is None or finding.code in comment.codes):
                    used.add((path, comment))
                    hit = True
            if hit:
                break
        (suppressed if hit else kept).append(finding)
    return SuppressionOutcome(kept, suppressed, used)
