"""What became of each finding of a fix run, so that the summary's numbers add up.

Every finding the check reported lands in exactly one bucket: fixed by its own fix, resolved by
the other fixes (a decoder fixed once lets every wrapper around it delegate), or remaining, for
one reason: its fix failed a proof (or could not be written), it needs ``--unsafe-fixes``, it has
only a suggestion to apply by hand, or there is no automatic fix. The fixed tree's findings
that no original one accounts for (information on a wrapper the fixes made supported) remain
too, counted as new: "remaining" is exactly what ``check`` reports once the fixes are in.

A gap is a class and a member. A fix can move a gap from one rule to another (a wrapper whose
inner model got fixed goes from "missing" to "does not delegate"): the finding then remains.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from eagle3lint.common.findings import Finding
from eagle3lint.fix.planner import DISPLAY_ONLY, UNSAFE, PlannedFix, finding_key
from eagle3lint.run.fix_session import FixOutcome


@dataclass(frozen=True)
class FixTally:
    total: int = 0
    fixed: int = 0  # by its own fix
    resolved: int = 0  # gone because of other fixes
    failed: int = 0  # its fix was rejected by a proof, or its file could not be written
    partial: int = 0  # its fix would leave the model short of supported (all or nothing)
    unsafe: int = 0  # its fix is unsafe and --unsafe-fixes was not given
    suggestions: int = 0  # display-only: a suggestion to apply by hand
    no_fix: int = 0
    # Findings of the fixed tree that no original finding accounts for (information on a wrapper
    # the fixes made supported, say): `check` reports them after the fixes, so they remain too.
    new: int = 0
    # Each finding counted in ``failed`` and ``partial``, with why its fix is not written: the
    # "not fixed" lines, one per finding, as many as the summary's "not fixed" count.
    not_fixed: tuple[tuple[Finding, str], ...] = ()

    @property
    def done(self) -> int:
        return self.fixed + self.resolved

    @property
    def remaining(self) -> int:
        """What ``check`` reports once the fixes are in (every finding of the fixed tree, when
        the fixed tree was re-checked)."""
        return self.failed + self.partial + self.unsafe + self.suggestions + self.no_fix + self.new


def _gap(finding: Finding) -> tuple[str, str]:
    return (finding.qualname, finding.method)


def tally_fixes(outcome: FixOutcome, unsafe_fixes: bool, unwritten: Collection[str] = ()) -> FixTally:
    """``unwritten``: files ``--apply`` could not write. Then only the findings whose own fixes
    were written count as fixed (what other fixes would have resolved is not known).

    With the re-check of the fixed tree (in memory, as ``check`` will read it), each of its
    findings is matched to at most one original finding (the same code, class and member, else
    the same class and member under another rule: a gap a fix moved); the originals matched
    remain, the others are gone, and the fixed tree's unmatched findings are new. "Remaining"
    is then exactly what the next ``check`` reports."""
    original = outcome.result.findings
    original_keys = {finding_key(f) for f in original}
    written = [p for p in outcome.accepted if not p.paths & set(unwritten)]
    lost = [p for p in outcome.accepted if p.paths & set(unwritten)]
    own_keys = {p.key for p in written}
    # A fix planned in a later pass answers the moved form of an original finding (same gap).
    own_gaps = {_gap(p.finding) for p in written if p.key not in original_keys}
    rejected = [r for r in outcome.rejections if not r.partial]
    failed_plans = [*lost, *(r.fix for r in rejected)]
    partial_keys = {r.fix.key for r in outcome.rejections if r.partial} - {p.key for p in failed_plans}
    failed_keys = {p.key for p in failed_plans}
    failed_gaps = {_gap(p.finding) for p in failed_plans if p.key not in original_keys}
    # Why each is not fixed, by key and by gap (the first reason given for it).
    reasons: dict[object, str] = {}
    for plan in lost:
        reasons.setdefault(plan.key, "its file was not written (above)")
    for rejection in outcome.rejections:
        reasons.setdefault(rejection.fix.key, rejection.reason)
        if rejection.fix.key not in original_keys:
            reasons.setdefault(_gap(rejection.fix.finding), rejection.reason)
    after = outcome.after.findings if outcome.after is not None and not unwritten else None
    stays = _matched(original, after, original_keys) if after is not None else None
    plans: dict[tuple[str, str, str], PlannedFix] = {p.key: p for p in outcome.plans}

    counts = dict.fromkeys(("fixed", "resolved", "failed", "partial", "unsafe", "suggestions", "no_fix"), 0)
    not_fixed: list[tuple[Finding, str]] = []
    for n, finding in enumerate(original):
        key, gap = finding_key(finding), _gap(finding)
        own = key in own_keys or gap in own_gaps
        # Without a re-check of what is on disk, only the written fixes are known to have worked.
        gone = not stays[n] if stays is not None else own
        if gone:
            counts["fixed" if own else "resolved"] += 1
            continue
        if key in partial_keys and key not in failed_keys:
            bucket = "partial"
        else:
            bucket = _why_not(finding, plans.get(key), unsafe_fixes, key in failed_keys or gap in failed_gaps)
        counts[bucket] += 1
        if bucket in ("failed", "partial"):
            not_fixed.append((finding, reasons.get(key) or reasons.get(gap) or "its fix did not close the gap"))
    new = len(after) - sum(stays) if after is not None and stays is not None else 0
    return FixTally(total=len(original), new=new, not_fixed=tuple(not_fixed), **counts)


def _matched(original: list[Finding], after: list[Finding], original_keys: set[tuple[str, str, str]]) -> list[bool]:
    """For each original finding, whether one of the fixed tree's findings is it (same key) or
    its moved form (a new key on the same class and member); each of those answers one
    original at most. (A finding that holds only under launch options this run assumes off is
    no moved form: information that was there all along, now read.)"""
    by_key = Counter(finding_key(f) for f in after)
    moved = Counter(_gap(f) for f in after if finding_key(f) not in original_keys and f.applies)
    stays = [False] * len(original)
    for n, finding in enumerate(original):
        key = finding_key(finding)
        if by_key[key]:
            by_key[key] -= 1
            stays[n] = True
    for n, finding in enumerate(original):
        gap = _gap(finding)
        if not stays[n] and moved[gap]:
            moved[gap] -= 1
            stays[n] = True
    return stays


def _why_not(finding: Finding, plan: PlannedFix | None, unsafe_fixes: bool, failed: bool) -> str:
    if failed:
        return "failed"
    if plan is None:
        return "no_fix"
    if plan.applicability == DISPLAY_ONLY or not plan.edits:
        return "suggestions"
    if plan.applicability == UNSAFE and not unsafe_fixes:
        return "unsafe"
    # An applicable fix that did not close the gap: dropped (the passes did not settle).
    return "failed"


def _count(number: int, singular: str, plural: str) -> str:
    return f"{number} {singular if number == 1 else plural}"


def summary_lines(tally: FixTally, files: int, applied: bool, base_note: str = "", unwritten: int = 0) -> list[str]:
    """The stderr summary. ``files``: files changed (dry run) or written (--apply); ``base_note``:
    where the diff's paths are relative to, when not the working directory; ``unwritten``:
    proven files --apply left as they were (read-only, changed meanwhile)."""
    lines = []
    if files:
        how = f": {tally.fixed} by their own fix, {tally.resolved} through those fixes" if tally.resolved else ""
        files_text = _count(files, "file", "files")
        if applied:
            lines.append(f"Fixed {tally.done} of {_count(tally.total, 'finding', 'findings')} in {files_text}{how}.")
        else:
            lines.append(
                f"Would fix {tally.done} of {_count(tally.total, 'finding', 'findings')} in {files_text}{how} "
                f"(dry run: --apply writes them{base_note})."
            )
    if unwritten:
        one = unwritten == 1
        lines.append(
            f"{_count(unwritten, 'file was', 'files were')} not written (reasons above): "
            f"{'its' if one else 'their'} fixes are not applied."
        )
    if tally.remaining:
        reasons = [
            # One count and one wording with the "not fixed" lines above the summary.
            (tally.failed + tally.partial, "not fixed (reasons above)", "not fixed (reasons above)"),
            (tally.unsafe, "needs --unsafe-fixes", "need --unsafe-fixes"),
            (
                tally.suggestions,
                "has only a suggestion to apply by hand (`eagle3lint check --format full` shows it)",
                "have only suggestions to apply by hand (`eagle3lint check --format full` shows them)",
            ),
            (tally.no_fix, "has no automatic fix", "have no automatic fix"),
            (
                tally.new,
                f"is new in the fixed tree (`eagle3lint check` {'will show' if files and not applied else 'shows'} it)",
                f"are new in the fixed tree (`eagle3lint check` {'will show' if files and not applied else 'shows'} them)",
            ),
        ]
        parts = ", ".join(f"{n} {one if n == 1 else many}" for n, one, many in reasons if n)
        verb = "would remain" if files and not applied else ("remains" if tally.remaining == 1 else "remain")
        lines.append(f"{_count(tally.remaining, 'finding', 'findings')} {verb}: {parts}.")
    return lines


def not_fixed_lines(tally: FixTally, root: Path | None = None) -> list[str]:
    """``path:line: CODE `Class.member` not fixed: reason``, one per finding the summary counts
    as not fixed (escaped: names and reasons come from the analysed tree); a path outside the
    working directory relative to ``root`` (the engine's source root), as ``check`` writes it."""
    from eagle3lint.common.escape import line_path, line_text

    return [
        f"{line_path(f.path, fallback_root=root)}:{f.line}: {line_text(f'{f.code} `{f.class_name}.{f.method}` not fixed: {reason}')}"
        for f, reason in tally.not_fixed
    ]
