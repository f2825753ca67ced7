"""``path:line:col: CODE severity: message`` lines and a one-line summary, like ruff's default
output (the severity in words too, not only in colour: a log, a pipe or a screen reader has none).

Every line goes out through ``line_text``: a message, a version or a name from the analysed
tree holding a newline or an escape can neither break a line in two (a forged finding, a
workflow command) nor drive the terminal."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, TextIO

from eagle3lint.checks.verdicts import status_counts, without_outcome
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


def finding_line(finding: Finding, root: Path, paint: Painter | None = None, unsafe_fixes: bool = False) -> str:
    """``path:line:col: CODE severity: message``, escaped; the path bold and the code and
    severity in the severity's colour when ``paint`` is on. A finding ``fix --apply`` fixes is
    marked as ruff marks one: ``CODE [*] severity: message``."""
    paint = paint or Painter(False)
    variant = f" [{finding.variant}]" if finding.variant else ""
    where = paint.bold(line_path(finding.path, fallback_root=root))
    mark = " [*]" if fixable(finding, unsafe_fixes) else ""
    code = paint.severity(line_text(f"{finding.code}{mark} {finding.severity}:"), finding.severity)
    return f"{where}:{finding.line}:{finding.column}: {code}{line_text(f'{variant} {finding.message}')}"


def fixable(finding: Finding, unsafe_fixes: bool = False) -> bool:
    """Whether ``fix --apply`` (with ``--unsafe-fixes`` when ``unsafe_fixes``) has a fix for it."""
    fix = finding.fix
    return fix is not None and (fix.applicability == "safe" or (unsafe_fixes and fix.applicability == "unsafe"))


def fix_hint(result: CheckResult) -> str | None:
    """The line after the summary when some findings have a fix: ``[*] 3 fixable with
    `eagle3lint fix --apply` (2 more with `--unsafe-fixes`).``; None when none has one."""
    unsafe = result.unsafe_fixes
    marked = sum(1 for f in result.findings if fixable(f, unsafe))
    hidden = sum(1 for f in result.findings if not fixable(f, unsafe) and fixable(f, True))
    if not marked and not hidden:
        return None
    from eagle3lint.common.cache_dir import is_cached_release

    more = f" ({hidden} more with `--unsafe-fixes`)" if hidden and marked else ""
    if is_cached_release(result.engine.root):
        # --apply leaves the shared download alone: the diffs are for a checkout of it.
        how = "`eagle3lint fix` shows the diff to apply to a checkout of this release"
        return f"[*] {marked or hidden} fixable{' with `--unsafe-fixes`' if not marked else ''}{more}: {how}."
    if not marked:
        return f"{hidden} fixable with `eagle3lint fix --apply --unsafe-fixes`."
    return f"[*] {marked} fixable with `eagle3lint fix --apply`{more}."


def write_concise(result: CheckResult, out: TextIO, verbose: bool = False, *, quiet: bool = False) -> None:
    """``quiet``: the findings alone, no listing or summary (nothing at all on a clean run)."""
    root = result.engine.source_root
    paint = painter_for(out)
    for finding in result.findings:
        out.write(finding_line(finding, root, paint, result.unsafe_fixes) + "\n")
    if quiet:
        return
    if verbose:
        write_model_listing(result, out)
    out.write(summary_line(result) + "\n")
    write_fix_hint(result, out)


def write_fix_hint(result: CheckResult, out: TextIO) -> None:
    hint = fix_hint(result)
    if hint is not None:
        out.write(hint + "\n")


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
        reason = without_outcome(model.status_reason, model.outcome)
        verdict = f"; {model.status}{outcome}: {reason}" if model.status and model.status != "not-a-target" else ""
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
