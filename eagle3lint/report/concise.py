"""``path:line:col: CODE message`` lines and a one-line summary, like ruff's default output."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, TextIO

from eagle3lint.report.paths import engine_label, line_path
from eagle3lint.verdicts import status_counts

if TYPE_CHECKING:
    from eagle3lint.result import CheckResult


def summary_line(result: CheckResult) -> str:
    counts = Counter(f.severity for f in result.findings)
    parts = [f"{counts[s]} {s}{'s' if counts[s] != 1 else ''}" for s in ("error", "warning", "info") if counts[s]]
    found = ", ".join(parts) if parts else "no findings"
    checked = models_checked(result)
    tail = f"; {len(result.errors)} file{'s' if len(result.errors) != 1 else ''} could not be analysed" if result.errors else ""
    assumed = result.options.label() if result.options is not None else ""
    tail += f"; assuming {assumed}" if assumed else ""
    return (
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
    return ", ".join(parts) + "; " if parts else ""


def write_concise(result: CheckResult, out: TextIO, verbose: bool = False) -> None:
    root = result.engine.source_root
    for finding in result.findings:
        variant = f" [{finding.variant}]" if finding.variant else ""
        out.write(
            f"{line_path(finding.path, fallback_root=root)}:{finding.line}:{finding.column}: "
            f"{finding.code}{variant} {finding.message}\n"
        )
    if verbose:
        write_model_listing(result, out)
    out.write(summary_line(result) + "\n")


def write_model_listing(result: CheckResult, out: TextIO) -> None:
    """What ``-v`` adds: every model class with its classification, unresolved entries, notes."""
    root = result.engine.source_root
    for plugin in result.engine.plugins:
        points = "; ".join(f"{e.group}: {e.name} = {e.value}" for e in plugin.entry_points if e.group in result.engine.pack.plugin_groups)
        out.write(f"  plugin        {plugin.label} ({line_path(str(plugin.root), fallback_root=root)}): {points or 'no entry point for this engine'}\n")
    # The classes the run reports on; the engine's others (a plugin's run reads the engine's
    # registry too) are counted in one line, not listed.
    shown = [m for m in result.models if not result.scope or m.in_scope(result.scope)]
    for model in sorted(shown, key=lambda m: (m.path, m.summary.lineno)):
        variant = f" [{model.variant}]" if model.variant else ""
        outcome = f" ({model.outcome})" if model.outcome else ""
        verdict = f"; {model.status}{outcome}: {model.status_reason}" if model.status and model.status != "not-a-target" else ""
        origin = f"; {model.origin}" if model.origin else ""
        out.write(f"  {model.kind:<13} {model.ref.qualname}{variant}: {model.reason}{origin}{verdict}\n")
    for entry in result.unresolved:
        out.write(f"  unresolved    {entry.name} in {line_path(entry.path, fallback_root=root)}: {entry.reason}\n")
    for note in result.notes:
        out.write(f"  note: {note}\n")
    if len(shown) < len(result.models):
        more = len(result.models) - len(shown)
        out.write(f"  outside       {more} more model class{'es' if more != 1 else ''} read for the analysis, outside the reporting scope\n")
    counts = status_counts(result.reported_models())
    if any(counts.values()):
        out.write("  verdicts: " + ", ".join(f"{n} {status}" for status, n in counts.items()) + "\n")
