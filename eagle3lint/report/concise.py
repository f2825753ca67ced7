"""``path:line:col: CODE severity: message`` lines and a one-line summary, like ruff's default
output (the severity in words too, not only in colour: a log, a pipe or a screen reader has none).

Every line goes out through ``line_text``: a message, a version or a name from the analysed
tree holding a newline or an escape can neither break a line in two (a forged finding, a
workflow command) nor drive the terminal."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, TextIO

from eagle3lint.checks.verdicts import status_counts
from eagle3lint.common.escape import line_path, line_text
from eagle3lint.report.colour import Painter, painter_for
from eagle3lint.report.paths import engine_label

if TYPE_CHECKING:
    from pathlib import Path

    from eagle3lint.common.findings import Finding
    from eagle3lint.model.result import CheckResult


def summary_line(result: CheckResult) -> str:
    counts = Counter(f.severity for f in result.findings)
    parts = [f"{counts[s]} {s}{'s' if counts[s] != 1 else ''}" for s in ("error", "warning", "info") if counts[s]]
    found = ", ".join(parts) if parts else "no findings"
    checked = models_checked(result)
    tail = f"; {len(result.errors)} file{'s' if len(result.errors) != 1 else ''} could not be analysed" if result.errors else ""
    assumed = result.options.label() if result.options is not None else ""
    tail += f"; assuming {assumed}" if assumed else ""
    return line_text(
        f"{engine_label(result.engine)}: {found} "
        f"({hidden_counts(result)}{checked} model class{'es' if checked != 1 else ''} checked){tail}"
    )


def models_checked(result: CheckResult) -> int:
    """The classes given a verdict in the reporting scope (``models`` counts the same)."""
    return len(result.reported_models())


def hidden_counts(result: CheckResult) -> str:
    """What the run found but does not report, so a clean summary is never mistaken for a clean
    tree: ``"2 suppressed, 40 in the baseline; "`` (empty when nothing was hidden)."""
    parts = []
    if result.suppressed:
        parts.append(f"{result.suppressed} suppressed")
    if result.baselined:
        parts.append(f"{result.baselined} in the baseline")
    if result.below_severity:
        parts.append(f"{result.below_severity} below --min-severity {result.min_severity}")
    return ", ".join(parts) + "; " if parts else ""


def finding_line(finding: Finding, root: Path, paint: Painter | None = None) -> str:
    """``path:line:col: CODE severity: message``, escaped; the path bold and the code and
    severity in the severity's colour when ``paint`` is on."""
    paint = paint or Painter(False)
    variant = f" [{finding.variant}]" if finding.variant else ""
    where = paint.bold(line_path(finding.path, fallback_root=root))
    code = paint.severity(line_text(f"{finding.code} {finding.severity}:"), finding.severity)
    return f"{where}:{finding.line}:{finding.column}: {code}{line_text(f'{variant} {finding.message}')}"


def write_concise(result: CheckResult, out: TextIO, verbose: bool = False, *, quiet: bool = False) -> None:
    """``quiet``: the findings alone, no listing or summary (nothing at all on a clean run)."""
    root = result.engine.source_root
    paint = painter_for(out)
    for finding in result.findings:
        out.write(finding_line(finding, root, paint) + "\n")
    if quiet:
        return
    if verbose:
        write_model_listing(result, out)
    out.write(summary_line(result) + "\n")


def write_model_listing(result: CheckResult, out: TextIO) -> None:
    """What ``-v`` adds: every model class with its classification, unresolved entries, notes."""
    root = result.engine.source_root

    def say(text: str) -> None:  # names, reasons and entry points come from the analysed tree
        out.write(line_text(text) + "\n")

    for plugin in result.engine.plugins:
        points = "; ".join(f"{e.group}: {e.name} = {e.value}" for e in plugin.entry_points if e.group in result.engine.pack.plugin_groups)
        say(f"  plugin        {plugin.label} ({line_path(str(plugin.root), fallback_root=root)}): {points or 'no entry point for this engine'}")
    # The classes the run reports on; the engine's others (a plugin's run reads the engine's
    # registry too) are counted in one line, not listed.
    shown = [m for m in result.models if result.in_reporting_scope(m)]
    for model in sorted(shown, key=lambda m: (m.path, m.summary.lineno)):
        variant = f" [{model.variant}]" if model.variant else ""
        outcome = f" ({model.outcome})" if model.outcome else ""
        verdict = f"; {model.status}{outcome}: {model.status_reason}" if model.status and model.status != "not-a-target" else ""
        origin = f"; {model.origin}" if model.origin else ""
        say(f"  {model.kind:<13} {model.ref.qualname}{variant}: {model.reason}{origin}{verdict}")
    for entry in result.unresolved:
        say(f"  unresolved    {entry.name} in {line_path(entry.path, fallback_root=root)}: {entry.reason}")
    for note in result.notes:
        say(f"  note: {note}")
    if len(shown) < len(result.models):
        more = len(result.models) - len(shown)
        say(f"  outside       {more} more model class{'es' if more != 1 else ''} read for the analysis, outside the reporting scope")
    counts = status_counts(result.reported_models())
    if any(counts.values()):
        say("  verdicts: " + ", ".join(f"{n} {status}" for status, n in counts.items()))
