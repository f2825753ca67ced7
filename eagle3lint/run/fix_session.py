"""One fix run: plan, edit each file once with libcst, prove, and (when asked) write.

Proof, per file then for the whole tree: the file-level proof (``proof.prove_file``); a re-check
of the edited tree must no longer report the fixed findings nor any new one; planning again on
the edited tree must produce no edit in the edited files (a second run changes nothing). A fix
that fails a step is dropped with its reason and the rest is rebuilt without it; nothing of a
file is written unless every fix touching it passed.
"""

from __future__ import annotations

import ast
import gc
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagle3lint.common.findings import Finding
from eagle3lint.engines import fix_patterns_for
from eagle3lint.fix.edits import ApplyError, Edit, InsertMembers, edits_by_path
from eagle3lint.fix.planner import (
    FixEnv,
    PlannedFix,
    applies,
    finding_key,
    plan_fixes,
)
from eagle3lint.fix.proof import ProofError, prove_file
from eagle3lint.fix.skeleton import Layout, original_tree
from eagle3lint.fix.texts import SourceFile, SourceSet
from eagle3lint.fix.write import WriteRefused, write_atomically
from eagle3lint.model.result import CheckResult
from eagle3lint.run.fix_recheck import recheck, summarize_text
from eagle3lint.source.index import ProjectIndex
from eagle3lint.source.parallel import WorkerPool, worth_forking_for
from eagle3lint.source.sources import ParseRequest, syntax_problem
from eagle3lint.source.summary_types import ModuleSummary

# A fix can make another possible (a fixed inner model lets its wrapper delegate): passes
# continue until planning on the fixed tree finds nothing more (which is the second-run proof).
MAX_PASSES = 4
# Within a pass, attempts after dropping the fixes that failed a proof.
MAX_ROUNDS = 4


@dataclass
class FileChange:
    path: str
    source: SourceFile  # as read from disk (what the writer compares against)
    new_text: str
    fixes: list[PlannedFix]

    def new_data(self) -> bytes:
        return self.source.encode(self.new_text)


@dataclass
class Rejection:
    fix: PlannedFix
    reason: str
    # The fix itself was proven, but it would leave its model short of supported (all or nothing).
    partial: bool = False


@dataclass
class FixOutcome:
    result: CheckResult
    plans: list[PlannedFix]
    accepted: list[PlannedFix] = field(default_factory=list)
    changes: dict[str, FileChange] = field(default_factory=dict)
    rejections: list[Rejection] = field(default_factory=list)
    after: CheckResult | None = None  # the re-check of the tree with every accepted change

    @property
    def remaining(self) -> list[Finding]:
        return (self.after or self.result).findings


@dataclass
class _Pass:
    texts: dict[str, str]
    after: CheckResult
    accepted: list[PlannedFix]


@dataclass
class _Memo:
    """What a later round (after fixes were rejected) can take from an earlier one: the plans
    for the unfixed tree, which do not change, and each file's edit, which depends only on its
    text, its edits and its parse request."""

    plans: list[PlannedFix] | None = None
    files: dict[tuple[str, str, tuple[Edit, ...], ParseRequest], _FileOutcome] = field(default_factory=dict)


def prepare_fixes(
    result: CheckResult,
    scope: list[Path],
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    unsafe_fixes: bool = False,
    sources: SourceSet | None = None,
) -> FixOutcome:
    """Plan, edit and prove every applicable fix; nothing is written here."""
    sources = sources or SourceSet()
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _prepare_all(result, scope, select, ignore, unsafe_fixes, sources)
    finally:
        if gc_was_enabled:
            gc.enable()


def _prepare_all(
    result: CheckResult,
    scope: list[Path],
    select: list[str] | None,
    ignore: list[str] | None,
    unsafe_fixes: bool,
    sources: SourceSet,
) -> FixOutcome:
    with WorkerPool() as pool:
        if pool.enabled and worth_forking_for(f.path for f in result.findings):
            # The edit workers load libcst (a fifth of a second) while this process plans.
            for _ in range(pool.workers):
                pool.submit(_load_editor)
        memo = _Memo()
        outcome = _prepare(result, scope, select, ignore, unsafe_fixes, sources, pool, [], memo)
        for _ in range(MAX_ROUNDS):
            partial = _partial_models(outcome)
            if not partial:
                break
            # All or nothing per model: what would leave it short of supported is not written.
            outcome = _prepare(result, scope, select, ignore, unsafe_fixes, sources, pool, [*outcome.rejections, *partial], memo)
        return outcome


def _partial_models(outcome: FixOutcome) -> list[Rejection]:
    """Accepted fixes whose model the re-check of the whole fixed tree does not find supported
    (a getter added, the capture still missing): each is rejected with the model's verdict."""
    after = outcome.after
    if after is None:
        return []
    before = {(f"{m.ref.module}.{m.ref.qualname}", m.variant): m for m in outcome.result.models if m.status}
    verdicts = {(f"{m.ref.module}.{m.ref.qualname}", m.variant): m for m in after.models if m.status}
    out = []
    for plan in outcome.accepted:
        key = (plan.finding.qualname, plan.finding.variant)
        was, now = before.get(key), verdicts.get(key)
        if was is None or now is None or now.status == "supported":
            continue
        if was.status == now.status and now.status in ("not-a-target", "unknown"):
            # A rename on a draft head, or on a model whose support cannot be proven either way:
            # nothing the fix could complete, nothing it leaves worse.
            continue
        reason = f"it would leave `{plan.finding.class_name}` {now.status} ({now.status_reason})"
        out.append(Rejection(plan, reason, partial=True))
    return out


def _load_editor() -> None:
    import eagle3lint.fix.apply  # noqa: F401


def _prepare(
    result: CheckResult,
    scope: list[Path],
    select: list[str] | None,
    ignore: list[str] | None,
    unsafe_fixes: bool,
    sources: SourceSet,
    pool: WorkerPool,
    rejections: list[Rejection],
    memo: _Memo,
) -> FixOutcome:
    patterns = tuple(fix_patterns_for(result.engine.name))
    if memo.plans is None:
        memo.plans = plan_fixes(FixEnv(result, sources, scope, patterns))
    plans = memo.plans
    outcome = FixOutcome(result, plans)
    outcome.rejections = list(rejections)
    texts: dict[str, str] = {}
    current = result
    accepted: list[PlannedFix] = []
    for _ in range(MAX_PASSES):
        candidates = _candidates(plans, outcome, unsafe_fixes)
        if not candidates:
            break
        step = _one_pass(current, _without_conflicts(candidates, outcome), sources, texts, scope, select, ignore, outcome, pool, memo)
        if step is None:
            break
        texts = {**texts, **step.texts}
        current = step.after
        accepted += step.accepted
        plans = plan_fixes(FixEnv(current, sources.overlay(texts), scope, patterns))
    else:
        if _candidates(plans, outcome, unsafe_fixes):
            # Still something to fix after the last pass: a second run would change files again.
            for plan in accepted:
                outcome.rejections.append(Rejection(plan, f"the fixes did not settle within {MAX_PASSES} passes"))
            return outcome
    outcome.accepted, outcome.after = accepted, (current if texts else None)
    for path, text in sorted(texts.items()):
        original = sources.get(path)
        if isinstance(original, SourceFile) and text != original.text:
            outcome.changes[path] = FileChange(path, original, text, [p for p in accepted if path in p.paths])
    return outcome


def _candidates(plans: list[PlannedFix], outcome: FixOutcome, unsafe_fixes: bool) -> list[PlannedFix]:
    """Plans to try: with edits, applicable at the chosen level, not rejected before."""
    rejected = {finding_key(r.fix.finding) for r in outcome.rejections}
    return [p for p in plans if p.edits and applies(p.applicability, unsafe_fixes) and p.key not in rejected]


def _one_pass(
    before: CheckResult,
    candidates: list[PlannedFix],
    sources: SourceSet,
    earlier: dict[str, str],
    scope: list[Path],
    select: list[str] | None,
    ignore: list[str] | None,
    outcome: FixOutcome,
    pool: WorkerPool,
    memo: _Memo,
) -> _Pass | None:
    view = sources.overlay(earlier) if earlier else sources
    for _ in range(MAX_ROUNDS):
        summaries: dict[str, ModuleSummary] = {}
        changed, failed = _build_files(candidates, view, before.index, summaries, pool, memo.files)
        if failed:
            candidates = _drop(candidates, outcome, _reason_from_files(failed))
            continue
        if not changed:
            return None
        after = recheck(before, changed, earlier, scope, select, ignore, summaries)
        blame = _not_fixed(candidates, before, after)
        if blame:
            candidates = _drop(candidates, outcome, _reason_from_blame(blame))
            continue
        return _Pass(changed, after, candidates)
    for plan in candidates:
        outcome.rejections.append(Rejection(plan, f"no proven edit after {MAX_ROUNDS} attempts"))
    return None


def write_changes(outcome: FixOutcome) -> dict[str, str | None]:
    """Write every proven file; the value is why a file was not written (None when it was)."""
    written: dict[str, str | None] = {}
    for path, change in sorted(outcome.changes.items()):
        try:
            write_atomically(path, change.new_data(), change.source.data)
        except WriteRefused as exc:
            written[path] = str(exc)
        else:
            written[path] = None
    return written


# ---- internals -------------------------------------------------------------------------------
def _edit_file(source: SourceFile, edits: list[Edit], parsed: dict[Any, Any], layout: Layout | None = None) -> tuple[str, ast.Module]:
    """The new text of one file and its ``ast``, proven (raises ApplyError/ProofError).
    ``layout``: the index's layout of the file, so that only the edited statements of the
    original are parsed again (the new text is parsed whole: the proof)."""
    # libcst is imported here, so a run with nothing to edit never loads it.
    from eagle3lint.fix.apply import apply_edits

    try:
        # A private tree: the proof replays the edits on its edited statements.
        tree = original_tree(source, layout, edits)
    except SyntaxError as exc:
        raise ApplyError(syntax_problem(exc)) from exc
    new_text = apply_edits(source.path, source.text, tree, edits, parsed)
    return new_text, prove_file(source.path, source.text, tree, new_text, edits)


def _digest(source: SourceFile, text: str) -> str:
    """The SHA-256 of ``text`` as the file would hold it ("" when it cannot be encoded: no
    layout then, the next pass parses the whole file)."""
    try:
        return hashlib.sha256(source.encode(text)).hexdigest()
    except (UnicodeError, LookupError):
        return ""


# One file's job: (source, its edits, the index's parse request for it, the index's layout of it).
_FileJob = tuple[SourceFile, list[Edit], ParseRequest, Layout | None]
# Its outcome: (path, new text or None, why it failed or None, summary of the new text or None).
_FileOutcome = tuple[str, str | None, str | None, ModuleSummary | None]


def _edit_files(jobs: list[_FileJob]) -> list[_FileOutcome]:
    """Edit, prove and summarise files (in a worker process when there are many)."""
    parsed: dict[Any, Any] = {}
    out: list[_FileOutcome] = []
    for source, file_edits, request, layout in jobs:
        try:
            new_text, new_tree = _edit_file(source, file_edits, parsed, layout)
        except (ApplyError, ProofError) as exc:
            out.append((source.path, None, str(exc), None))
            continue
        except (ValueError, RecursionError, MemoryError) as exc:  # libcst on input it cannot take
            out.append((source.path, None, f"cannot be edited: {type(exc).__name__}: {exc}", None))
            continue
        except Exception as exc:  # a fixer bug on one file's input costs that file's fixes, not the run
            out.append((source.path, None, f"cannot be edited: internal error (please report): {type(exc).__name__}: {exc}", None))
            continue
        summary = summarize_text(request, new_text, new_tree)
        if isinstance(summary, ModuleSummary):
            # What the next pass edits, if it edits this file again: its layout serves then.
            summary.source_digest = _digest(source, new_text)
        out.append((source.path, new_text, None, summary if isinstance(summary, ModuleSummary) else None))
    return out


def _build_files(
    candidates: list[PlannedFix],
    sources: SourceSet,
    index: ProjectIndex | None,
    summaries: dict[str, ModuleSummary],
    pool: WorkerPool,
    done: dict[tuple[str, str, tuple[Edit, ...], ParseRequest], _FileOutcome] | None = None,
) -> tuple[dict[str, str], dict[str, str]]:
    """New texts of the files the candidates edit, each proven (summaries of the new texts into
    ``summaries``, for the re-check); and why the others failed. Files are edited on every core:
    parsing and proving large model files is most of a fix run's time."""
    changed: dict[str, str] = {}
    failed: dict[str, str] = {}
    jobs: list[_FileJob] = []
    done = {} if done is None else done
    outcomes: list[_FileOutcome] = []
    edits = [e for plan in candidates for e in plan.edits]
    for path, file_edits in edits_by_path(edits).items():
        source = sources.get(path)
        if not isinstance(source, SourceFile):
            failed[path] = source.message
            continue
        request = index.request_for(Path(path)) if index is not None else ParseRequest(path, "__fixed__", False, frozenset())
        known = index.modules.get(request.module) if index is not None else None
        earlier = done.get((path, source.text, tuple(file_edits), request))
        if earlier is not None:
            outcomes.append(earlier)
            continue
        layout = (known.source_digest, known.layout) if known is not None and known.path == path else None
        jobs.append((source, file_edits, request, layout))
    if pool.enabled and len(jobs) >= 2 and worth_forking_for(job[0].path for job in jobs):
        # Largest files first, dealt round-robin, so the workers finish together.
        by_size = sorted(jobs, key=lambda job: -len(job[0].text))
        batches = [by_size[i :: pool.workers * 4] for i in range(pool.workers * 4)]
        futures = [pool.submit(_edit_files, batch) for batch in batches if batch]
        made = [o for future in futures for o in future.result()]
    else:
        made = _edit_files(jobs)
    by_job = {job[0].path: job for job in jobs}
    for outcome in made:
        source, file_edits, request, _ = by_job[outcome[0]]
        done[(source.path, source.text, tuple(file_edits), request)] = outcome
    outcomes += made
    by_path = {path: found for path in edits_by_path(edits) if isinstance(found := sources.get(path), SourceFile)}
    for path, new_text, problem, summary in outcomes:
        if problem is not None or new_text is None:
            failed[path] = problem or "no new text"
            continue
        if summary is not None:
            summaries[path] = summary
        if new_text != by_path[path].text:
            changed[path] = new_text
    return changed, failed


def _without_conflicts(candidates: list[PlannedFix], outcome: FixOutcome) -> list[PlannedFix]:
    """Two fixes adding the same member to the same class with different code: the first wins."""
    seen: dict[tuple[str, tuple[str, ...], str], str] = {}
    kept = []
    for plan in candidates:
        clash = None
        for edit in plan.edits:
            if isinstance(edit, InsertMembers):
                key = (edit.path, edit.class_path, edit.name)
                if seen.get(key, edit.source) != edit.source:
                    clash = f"another fix adds a different `{edit.name}` to `{'.'.join(edit.class_path)}`"
        if clash:
            outcome.rejections.append(Rejection(plan, clash))
            continue
        for edit in plan.edits:
            if isinstance(edit, InsertMembers):
                seen.setdefault((edit.path, edit.class_path, edit.name), edit.source)
        kept.append(plan)
    return kept


def _reason_from_files(failed: dict[str, str]) -> Callable[[PlannedFix], str | None]:
    def reason(plan: PlannedFix) -> str | None:
        return next((f"{Path(x).name}: {failed[x]}" for x in sorted(plan.paths) if x in failed), None)

    return reason


def _reason_from_blame(blame: dict[int, str]) -> Callable[[PlannedFix], str | None]:
    return lambda plan: blame.get(id(plan))


def _drop(candidates: list[PlannedFix], outcome: FixOutcome, reason_for: Callable[[PlannedFix], str | None]) -> list[PlannedFix]:
    kept = []
    for plan in candidates:
        reason = reason_for(plan)
        if reason:
            outcome.rejections.append(Rejection(plan, reason))
        else:
            kept.append(plan)
    return kept


def _not_fixed(candidates: list[PlannedFix], before: CheckResult, after: CheckResult) -> dict[int, str]:
    """Fixes whose finding the re-check still reports, or that brought a new finding.

    A finding is new when its class and member had no finding before: a wrapper whose inner
    model got fixed moves from "missing" (E3L001) to "does not delegate" (E3L004), the same gap.
    A warning or information finding on a class that had findings before is not blamed: it
    points at code the class had all along, which the re-check now reads because the fix made
    the class a target (a latent pipeline-parallel capture, once the protocol is declared); so is
    a finding standing for members that had findings before: a vLLM model whose decoder got
    fixed moves from "missing" (E3L001 per member) to "one line away" (E3L013).
    """
    # A finding standing for several members (one cause) covers each of them.
    before_members = {(f.qualname, m) for f in before.findings for m in [f.method, *f.data.get("members", ())]}
    before_classes = {f.qualname for f in before.findings}
    after_keys = {finding_key(f) for f in after.findings}
    blame: dict[int, str] = {}
    for plan in candidates:
        if plan.key in after_keys:
            blame[id(plan)] = "the re-check of the fixed tree still reports it"
    for finding in after.findings:
        if any((finding.qualname, m) in before_members for m in [finding.method, *finding.data.get("members", ())]):
            continue
        if finding.severity in ("info", "warning") and finding.qualname in before_classes:
            continue
        if any((finding.qualname, member) in before_members for _, member in finding.data.get("replaces", ())):
            continue
        involved = _files_behind(after, finding) | {finding.path}
        culprits = [p for p in candidates if p.paths & involved] or candidates
        for plan in culprits:
            blame.setdefault(id(plan), f"the fixed tree has a new finding: {finding.code} `{finding.class_name}.{finding.method}`")
    for error in after.errors:
        if error.path not in {e.path for e in before.errors}:
            for plan in candidates:
                if error.path in plan.paths:
                    blame.setdefault(id(plan), f"the fixed file cannot be analysed: {error.message}")
    return blame


def _files_behind(result: CheckResult, finding: Finding) -> set[str]:
    """Files of the classes a finding's class is built from: its MRO and its inner models'."""
    from eagle3lint.model.models import inner_models

    index = result.index
    model = next((m for m in result.models if f"{m.ref.module}.{m.ref.qualname}" == finding.qualname), None)
    if index is None or model is None:
        return set()
    refs = list(index.mro(model.ref).classes)
    for _, inner in inner_models(index, model.ref):
        refs.extend(index.mro(inner).classes)
    paths = set()
    for ref in refs:
        module = index.module(ref.module)
        if module is not None:
            paths.add(module.path)
    return paths
