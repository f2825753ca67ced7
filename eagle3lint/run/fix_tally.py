"""What became of each finding of a fix run, so that the summary's numbers add up.

Every finding the check reported lands in exactly one bucket: fixed by its own fix, resolved by
the other fixes (a decoder fixed once lets every wrapper around it delegate), or remaining, for
one reason: its fix failed a proof (or could not be written), it needs ``--unsafe-fixes``, it has
only a suggestion to apply by hand, or there is no automatic fix. "Remaining" therefore means
what ``check`` still reports once the fixes are in.

A gap is a class and a member. A fix can move a gap from one rule to another (a wrapper whose
inner model got fixed goes from "missing" to "does not delegate"): the finding then remains.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

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
    new: int = 0  # findings of the fixed tree that no original finding accounts for

    @property
    def done(self) -> int:
        return self.fixed + self.resolved

    @property
    def remaining(self) -> int:
        return self.failed + self.partial + self.unsafe + self.suggestions + self.no_fix


def _gap(finding: Finding) -> tuple[str, str]:
    return (finding.qualname, finding.method)


def tally_fixes(outcome: FixOutcome, unsafe_fixes: bool, unwritten: Collection[str] = ()) -> FixTally:
    """``unwritten``: files ``--apply`` could not write. Then only the findings whose own fixes
    were written count as fixed (what other fixes would have resolved is not known)."""
    original = outcome.result.findings
    original_keys = {finding_key(f) for f in original}
    written = [p for p in outcome.accepted if not p.paths & set(unwritten)]
    lost = [p for p in outcome.accepted if p.paths & set(unwritten)]
    own_keys = {p.key for p in written}
    # A fix planned in a later pass answers the moved form of an original finding (same gap).
    own_gaps = {_gap(p.finding) for p in written if p.key not in original_keys}
    failed_plans = [*lost, *(r.fix for r in outcome.rejections if not r.partial)]
    partial_keys = {r.fix.key for r in outcome.rejections if r.partial} - {p.key for p in failed_plans}
    failed_keys = {p.key for p in failed_plans}
    failed_gaps = {_gap(p.finding) for p in failed_plans if p.key not in original_keys}
    after = outcome.after.findings if outcome.after is not None and not unwritten else None
    after_keys = {finding_key(f) for f in after} if after is not None else set()
    # (A finding that holds only under launch options this run assumes off moved nothing.)
    moved_gaps = {_gap(f) for f in after if finding_key(f) not in original_keys and f.applies} if after is not None else set()
    plans: dict[tuple[str, str, str], PlannedFix] = {p.key: p for p in outcome.plans}

    counts = dict.fromkeys(("fixed", "resolved", "failed", "partial", "unsafe", "suggestions", "no_fix"), 0)
    remaining_gaps: set[tuple[str, str]] = set()
    for finding in original:
        key, gap = finding_key(finding), _gap(finding)
        own = key in own_keys or gap in own_gaps
        # Without a re-check of what is on disk, only the written fixes are known to have worked.
        gone = (key not in after_keys and gap not in moved_gaps) if after is not None else own
        if gone:
            counts["fixed" if own else "resolved"] += 1
            continue
        remaining_gaps.add(gap)
        if key in partial_keys and key not in failed_keys:
            counts["partial"] += 1
            continue
        counts[_why_not(finding, plans.get(key), unsafe_fixes, key in failed_keys or gap in failed_gaps)] += 1
    new = 0
    if after is not None:
        # A finding that holds only under launch options this run assumes off is no new problem.
        new = sum(1 for f in after if f.applies and finding_key(f) not in original_keys and _gap(f) not in remaining_gaps)
    return FixTally(total=len(original), new=new, **counts)


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
            (tally.failed, "could not be fixed (reasons above)", "could not be fixed (reasons above)"),
            (
                tally.partial,
                "has a fix that would leave its model incomplete, so it is not written (reasons above)",
                "have fixes that would leave their models incomplete, so they are not written (reasons above)",
            ),
            (tally.unsafe, "needs --unsafe-fixes", "need --unsafe-fixes"),
            (
                tally.suggestions,
                "has only a suggestion to apply by hand (`eagle3lint check --format full` shows it)",
                "have only suggestions to apply by hand (`eagle3lint check --format full` shows them)",
            ),
            (tally.no_fix, "has no automatic fix", "have no automatic fix"),
        ]
        parts = ", ".join(f"{n} {one if n == 1 else many}" for n, one, many in reasons if n)
        verb = "would remain" if files and not applied else ("remains" if tally.remaining == 1 else "remain")
        lines.append(f"{_count(tally.remaining, 'finding', 'findings')} {verb}: {parts}.")
    if tally.new:
        had = "has" if applied else "would have"
        lines.append(
            f"The fixed tree {had} {_count(tally.new, 'new finding', 'new findings')} besides these "
            "(`eagle3lint check` shows them)."
        )
    return lines
