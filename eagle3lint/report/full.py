"""Each finding with its source line, the engine call sites that need the member, and the fix
diff when one is known: what a person reads to understand a finding without opening the engine."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from eagle3lint.lines import line_texts
from eagle3lint.report.concise import summary_line, write_model_listing
from eagle3lint.report.paths import line_path

if TYPE_CHECKING:
    from pathlib import Path

    from eagle3lint.findings import Finding
    from eagle3lint.result import CheckResult


# Every control character but the tab, as ``\xNN``.
_CONTROL = {c: f"\\x{c:02x}" for c in [*range(32), 127] if c != ord("\t")}


class SourceLines:
    """Lines of the reported files, each file read once; an unreadable file shows no snippet."""

    def __init__(self) -> None:
        self._files: dict[str, list[str] | None] = {}

    def line(self, path: str, number: int) -> str | None:
        if path not in self._files:
            try:
                # Lines as the ``ast`` numbers them: a lone CR ends one, a form feed does not.
                with open(path, encoding="utf-8", errors="replace", newline="") as handle:
                    self._files[path] = line_texts(handle.read())
            except OSError:
                self._files[path] = None
        lines = self._files[path]
        if lines is None or not 1 <= number <= len(lines):
            return None
        # A control character of the file (a form feed, an escape sequence) is shown escaped.
        return lines[number - 1].rstrip().translate(_CONTROL)


def write_finding(finding: Finding, out: TextIO, sources: SourceLines, root: Path) -> None:
    variant = f" [{finding.variant}]" if finding.variant else ""
    out.write(
        f"{line_path(finding.path, fallback_root=root)}:{finding.line}:{finding.column}: "
        f"{finding.code}{variant} {finding.message}\n"
    )
    text = sources.line(finding.path, finding.line)
    if text is not None:
        gutter = " " * len(str(finding.line))
        caret = " " * max(finding.column - 1, 0) + "^"
        out.write(f"{gutter} |\n{finding.line} | {text}\n{gutter} | {caret} {finding.code}\n{gutter} |\n")
    if finding.related:
        out.write("  = engine call sites:\n")
        for site in finding.related:
            out.write(f"      {line_path(site.path, fallback_root=root)}:{site.line}: {site.message}\n")
    if finding.fix is not None:
        out.write(f"  = fix ({finding.fix.applicability}): {finding.fix.description}\n")
        for line in line_texts(finding.fix.diff):  # a form feed stays in its line, shown escaped
            out.write(f"      {line.translate(_CONTROL)}\n")
    out.write(f"  = help: {finding.rule}; `eagle3lint explain {finding.code}`\n\n")


def write_full(result: CheckResult, out: TextIO, verbose: bool = False) -> None:
    sources = SourceLines()
    for finding in result.findings:
        write_finding(finding, out, sources, result.engine.source_root)
    if verbose:
        write_model_listing(result, out)
    out.write(summary_line(result) + "\n")
