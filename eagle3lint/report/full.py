"""Each finding with its source line, the engine call sites that need the member, and the fix
diff when one is known: what a person reads to understand a finding without opening the engine.

The source line, the call sites' messages and the diff come from analysed files: each line is
written through ``line_text`` (tabs expanded in code), as the concise format writes its own."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from eagle3lint.common.escape import line_path, line_text
from eagle3lint.common.lines import line_texts
from eagle3lint.report.colour import Painter, painter_for
from eagle3lint.report.concise import (
    finding_line,
    summary_line,
    write_fix_hint,
    write_model_listing,
)

if TYPE_CHECKING:
    from pathlib import Path

    from eagle3lint.common.findings import Finding
    from eagle3lint.model.result import CheckResult


class SourceLines:
    """Lines of the reported files, each file read once; an unreadable file shows no snippet.
    Lines end where the parser's do (``\\n``, ``\\r\\n``, ``\\r``), not at the form feeds and
    separators ``str.splitlines`` also breaks on, so a finding's line number finds its line."""

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
        # Raw: the caller escapes it (a form feed, an escape sequence) as it lays out the caret.
        return lines[number - 1].rstrip()


TAB_SIZE = 4


def write_finding(
    finding: Finding, out: TextIO, sources: SourceLines, root: Path, paint: Painter | None = None, unsafe_fixes: bool = False
) -> None:
    out.write(finding_line(finding, root, paint, unsafe_fixes) + "\n")
    text = sources.line(finding.path, finding.line)
    if text is not None:
        gutter = " " * len(str(finding.line))
        # The caret stands under the column as shown: tabs expanded, escapes as wide as written.
        before = line_text(text[: max(finding.column - 1, 0)], TAB_SIZE)
        caret = " " * len(before) + "^"
        shown = line_text(text, TAB_SIZE)
        out.write(f"{gutter} |\n{finding.line} | {shown}\n{gutter} | {caret} {finding.code}\n{gutter} |\n")
    if finding.related:
        out.write("  = engine call sites:\n")
        for site in finding.related:
            out.write(f"      {line_path(site.path, fallback_root=root)}:{site.line}: {line_text(site.message)}\n")
    if finding.fix is not None:
        out.write(f"  = fix ({finding.fix.applicability}): {line_text(finding.fix.description)}\n")
        # Shown, not applied (``fix`` prints the diff to apply): each line escaped; a form feed
        # stays in its line (lines as the ``ast`` numbers them).
        for line in line_texts(finding.fix.diff):
            out.write(f"      {line_text(line, TAB_SIZE)}\n")
    out.write(f"  = help: {finding.rule}; `eagle3lint explain {finding.code}`\n\n")


def write_full(result: CheckResult, out: TextIO, verbose: bool = False, *, quiet: bool = False) -> None:
    sources = SourceLines()
    paint = painter_for(out)
    for finding in result.findings:
        write_finding(finding, out, sources, result.engine.source_root, paint, result.unsafe_fixes)
    if quiet:
        return
    if verbose:
        write_model_listing(result, out)
    out.write(summary_line(result) + "\n")
    write_fix_hint(result, out)
