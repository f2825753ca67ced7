"""The check pipeline: engine source -> contract -> project index -> findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from eagle3lint.checks import REGISTRY
from eagle3lint.checks.base import Rule
from eagle3lint.checks.context import CheckContext
from eagle3lint.contract import Contract, extract_contract
from eagle3lint.engine import Engine
from eagle3lint.findings import FileError, Finding
from eagle3lint.index import ProjectIndex, SummaryProvider
from eagle3lint.models import ModelClass, UnresolvedEntry, discover_sglang_models, in_scope
from eagle3lint.sources import iter_python_files


@dataclass
class CheckResult:
    engine: Engine
    contract: Contract
    findings: list[Finding]
    errors: list[FileError]
    models: list[ModelClass]
    unresolved: list[UnresolvedEntry] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    index: ProjectIndex | None = None


def select_rules(select: list[str] | None = None, ignore: list[str] | None = None) -> list[type[Rule]]:
    chosen = []
    for rule in REGISTRY:
        wanted = rule.default_enabled if not select else any(rule.code.startswith(s) or s == "ALL" for s in select)
        if ignore and any(rule.code.startswith(i) for i in ignore):
            wanted = False
        if wanted:
            chosen.append(rule)
    return chosen


def model_files(engine: Engine) -> list[Path]:
    files: list[Path] = []
    for rel in engine.pack.models:
        folder = engine.root / rel
        if folder.is_dir():
            files.extend(iter_python_files(folder))
    return files


def build_index(engine: Engine, provider: SummaryProvider | None = None) -> ProjectIndex:
    pack = engine.pack
    walk = frozenset(pack.members) | frozenset(n for spec in pack.members.values() for n in spec.former_names)
    needles = tuple(sorted(name.encode() for name, spec in pack.members.items() if spec.kind == "attribute"))
    return ProjectIndex(engine, walk_names=walk, needles=needles, provider=provider)


def run_check(
    engine: Engine,
    scope: list[Path],
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    contract: Contract | None = None,
    provider: SummaryProvider | None = None,
) -> CheckResult:
    """``contract`` and ``provider`` let the fixer re-check edited texts without re-reading
    the engine (the contract does not depend on model files)."""
    contract = contract or extract_contract(engine)
    index = build_index(engine, provider)
    modules = index.load_files(model_files(engine))
    # A single file outside the models folders can still be the reporting scope.
    extra = [p for p in scope if p.is_file() and p.suffix == ".py"]
    modules += index.load_files(extra)
    models, unresolved = discover_sglang_models(index, modules)
    ctx = CheckContext(index=index, contract=contract, models=models)
    findings: list[Finding] = []
    for rule in select_rules(select, ignore):
        findings.extend(rule().check(ctx))
    findings = [f for f in findings if in_scope(f.path, scope) or _model_in_scope(f, models, scope)]
    findings.sort(key=Finding.sort_key)
    errors = sorted([*contract.errors, *index.errors.values()], key=lambda e: e.path)
    errors = [e for e in errors if in_scope(e.path, scope) or _is_engine_file(e.path, engine)]
    return CheckResult(engine, contract, findings, errors, models, unresolved, ctx.notes, index)


def _model_in_scope(finding: Finding, models: list[ModelClass], scope: list[Path]) -> bool:
    for model in models:
        if finding.qualname == f"{model.ref.module}.{model.ref.qualname}":
            return in_scope(model.path, scope)
    return False


def _is_engine_file(path: str, engine: Engine) -> bool:
    try:
        Path(path).resolve().relative_to(engine.root.resolve())
    except ValueError:
        return False
    return True
