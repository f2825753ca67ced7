"""The fixes a report shows: each finding's fix (applicability, description, its own diff) for
``check --format json``/``full`` and ``models``. Nothing here is proven or written: ``fix``
proves the same edits before it writes them (``session``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eagle3lint.checks.context import CheckContext
from eagle3lint.common.findings import Fix
from eagle3lint.fix.diff import diff_label, unified_diff
from eagle3lint.fix.edits import ApplyError, Edit, edits_by_path
from eagle3lint.fix.planner import DISPLAY_ONLY, FixEnv, FixPattern, as_fix_applies, plan_fixes
from eagle3lint.fix.proof import ProofError
from eagle3lint.fix.texts import SourceFile, SourceSet
from eagle3lint.model.result import CheckResult
from eagle3lint.source.parallel import WorkerPool, worth_forking_for
from eagle3lint.source.sources import syntax_problem


def attach_fixes(
    result: CheckResult,
    patterns: tuple[type[FixPattern], ...],
    scope: list[Path] | None = None,
    context: CheckContext | None = None,
    *,
    render: bool = True,
) -> dict[str, str]:
    """Fill ``Finding.fix`` for every finding one of the engine's ``patterns`` fits, each with its own diff. The diffs
    are rendered on every core, the plans of one file together (they share its parse).

    ``context``: the engine's context the check ran with, whose analyses the patterns reuse.
    ``render=False``: the applicability and description alone, no diff (``check``'s ``[*]``
    marks: the planning costs a tenth of a cold check, the diffs as much again as the check).

    Returns the SHA-256 of every file the fixes were made from, as this process read it before
    any diff was rendered: a stored copy of the fixes is stale once one of them changes."""
    sources = SourceSet()
    env = FixEnv(result, sources, scope or [result.engine.root], patterns, check_context=context)
    plans = as_fix_applies(plan_fixes(env), result)
    if not render:
        for plan in plans:
            for edit in plan.edits:
                sources.get(edit.path)  # a change to it makes a stored copy stale
            plan.finding.fix = Fix(plan.applicability, plan.full_description())
        return sources.digests()
    jobs: dict[str, list[tuple[int, tuple[Edit, ...]]]] = {}
    for n, plan in enumerate(plans):
        if plan.edits:
            jobs.setdefault(plan.edits[0].path, []).append((n, tuple(plan.edits)))
        for edit in plan.edits:
            sources.get(edit.path)  # the render workers read it again: a change since shows
    batches = list(jobs.values())
    rendered: dict[int, tuple[str, str | None]] = {}
    if batches:
        import eagle3lint.fix.apply  # noqa: F401  (forked workers inherit libcst)
    with WorkerPool() as pool:
        if pool.enabled and len(batches) >= 4 and worth_forking_for(jobs):
            lanes = [[job for batch in batches[i :: pool.workers * 2] for job in batch] for i in range(pool.workers * 2)]
            futures = [pool.submit(_render_diffs, lane, result.engine.source_root) for lane in lanes if lane]
            outcomes = [o for future in futures for o in future.result()]
        else:
            outcomes = _render_diffs([job for batch in batches for job in batch], result.engine.source_root)
    for n, diff, problem in outcomes:
        rendered[n] = (diff, problem)
    for n, plan in enumerate(plans):
        applicability, description, diff = plan.applicability, plan.full_description(), ""
        if n in rendered:
            diff, problem = rendered[n]
            if problem is not None:
                applicability, description = DISPLAY_ONLY, f"{description} (cannot be rendered: {problem})"
        plan.finding.fix = Fix(applicability, description, diff)
    return sources.digests()


def _render_diffs(jobs: list[tuple[int, tuple[Edit, ...]]], source_root: Path) -> list[tuple[int, str, str | None]]:
    """(plan number, diff, why it could not be rendered) for each job; one process's share."""
    sources = SourceSet()
    parsed: dict[Any, Any] = {}
    out: list[tuple[int, str, str | None]] = []
    for n, edits in jobs:
        try:
            out.append((n, render_diff(edits, sources, parsed, source_root), None))
        except (ApplyError, ProofError, OSError) as exc:
            out.append((n, "", str(exc)))
    return out


def render_diff(edits: tuple[Edit, ...] | list[Edit], sources: SourceSet, parsed: dict[Any, Any], source_root: Path) -> str:
    """The unified diff of one fix alone (for ``check --format json``). Not proven like a
    written fix (that costs a full parse per finding); ``fix`` proves the same edits."""
    from eagle3lint.fix.apply import apply_edits

    out = []
    for path, file_edits in edits_by_path(edits).items():
        source = sources.get(path)
        if not isinstance(source, SourceFile):
            raise ApplyError(source.message)
        try:
            tree = source.tree()
        except SyntaxError as exc:
            raise ApplyError(syntax_problem(exc)) from exc
        new_text = apply_edits(source.path, source.text, tree, file_edits, parsed)
        out.append(unified_diff(source.text, new_text, diff_label(path, source_root)))
    return "".join(out)
