"""The check pipeline: engine source -> contract -> project index -> findings.

Then, in order: per-file ignores, suppression comments, rules about suppressions, baseline.
"""

from __future__ import annotations

import dataclasses
import gc
from pathlib import Path
from typing import TYPE_CHECKING

from eagle3lint.engines import adapter_for, checked_context, fix_patterns_for
from eagle3lint.model.result import CheckResult
from eagle3lint.settings.config import Settings
from eagle3lint.source.engine import Engine
from eagle3lint.source.sources import iter_python_files, tree_path

# The analysis modules load only when a run analyses: a warm run answered from the cache
# never needs them (start-up is most of its cost).
if TYPE_CHECKING:
    from eagle3lint.checks.base import Rule
    from eagle3lint.checks.context import CheckContext
    from eagle3lint.common.findings import Finding
    from eagle3lint.model.contract_types import Contract
    from eagle3lint.model.launch_options import EngineOptions
    from eagle3lint.model.models import ModelClass, UnresolvedEntry
    from eagle3lint.run.cache import Cache
    from eagle3lint.source.index import ProjectIndex, SummaryProvider
    from eagle3lint.source.parallel import WorkerPool


def select_rules(
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    extend_select: list[str] | None = None,
    engine: str | None = None,
) -> list[type[Rule]]:
    from eagle3lint.engines import rules_for

    chosen = []
    for rule in sorted(rules_for(engine), key=lambda r: r.code):
        if select:
            wanted = any(rule.code.startswith(s) or s == "ALL" for s in select)
        else:
            wanted = rule.default_enabled
        if extend_select and any(rule.code.startswith(s) for s in extend_select):
            wanted = True
        if ignore and any(rule.code.startswith(i) for i in ignore):
            wanted = False
        if wanted:
            chosen.append(rule)
    return chosen


def engine_options(engine: Engine, settings: Settings) -> EngineOptions:
    """The launch configuration a run assumes: the settings' ``engine-options`` (``--engine-option``
    adds to them) against the engine's rule pack, the rest at the release's defaults."""
    from eagle3lint.model.launch_options import parse_options

    return parse_options(settings.engine_options, engine.pack.options, adapter_for(engine.name).option_defaults(engine), engine.name)


def build_index(engine: Engine, pool: WorkerPool | None = None) -> ProjectIndex:
    index = adapter_for(engine.name).build_index(engine)
    index.provider = pool.parse if pool else None
    return index


def customize_engine(engine: Engine, settings: Settings) -> Engine:
    """The engine with the project's configured extra members merged into its rule pack."""
    from eagle3lint.source.rulepack import MemberSpec, extend_pack

    overrides = settings.engines.get(engine.name)
    if overrides is None or not overrides.extra_members:
        return engine
    extra = [
        MemberSpec(m.name, m.kind, m.role, m.summary, required=m.required, origin=str(settings.path or "pyproject.toml"))
        for m in overrides.extra_members
    ]
    return dataclasses.replace(engine, pack=extend_pack(engine.pack, extra))


def run_check(
    engine: Engine,
    scope: list[Path],
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    workers: int | None = None,
    settings: Settings | None = None,
    extend_select: list[str] | None = None,
    use_cache: bool = True,
    baseline: Path | None = None,
    contract: Contract | None = None,
    provider: SummaryProvider | None = None,
    need_index: bool = False,
    with_fixes: bool = False,
) -> CheckResult:
    """``contract`` and ``provider`` let the fixer re-check edited texts in memory: the contract
    does not depend on model files, and the provider serves the edited summaries.

    With the cache, a run whose inputs are all unchanged returns the stored result, without an
    index (``need_index`` asks for a full run: the fixer needs it). ``with_fixes`` attaches each
    finding's fix (applicability, description, diff: what ``json``, ``full`` and ``models``
    show); the fixes are stored with the result, so a warm run renders no diff either."""
    settings = settings or Settings()
    engine = customize_engine(engine, settings)
    baseline, settings, skipped = _applicable_baseline(baseline, settings, engine)
    result = _run_check(engine, scope, select, ignore, workers, settings, extend_select, use_cache, baseline, contract, provider, need_index, with_fixes)
    result.baseline_skipped = skipped
    return result


def _applicable_baseline(baseline: Path | None, settings: Settings, engine: Engine) -> tuple[Path | None, Settings, str | None]:
    """The baseline named, unless it was written for another tree: then none, and why."""
    path = baseline or settings.baseline
    if path is None:
        return baseline, settings, None
    from eagle3lint.settings.baseline import baseline_skipped

    why = baseline_skipped(path, engine)
    if why is None:
        return baseline, settings, None
    return None, dataclasses.replace(settings, baseline=None), why


def _run_check(
    engine: Engine,
    scope: list[Path],
    select: list[str] | None,
    ignore: list[str] | None,
    workers: int | None,
    settings: Settings,
    extend_select: list[str] | None,
    use_cache: bool,
    baseline: Path | None,
    contract: Contract | None,
    provider: SummaryProvider | None,
    need_index: bool,
    with_fixes: bool,
) -> CheckResult:
    options = engine_options(engine, settings)
    if provider is not None:
        use_cache = False
    reporting_scope = list(scope)  # fixes are planned for what the caller asked about
    gc_was_enabled = gc.isenabled()
    # The run allocates many long-lived objects and frees few cycles: collection only costs.
    gc.disable()
    try:
        cache = _open_cache(engine, settings, scope) if use_cache else None
        fingerprint = cache.contract_fingerprint() if cache is not None and contract is None else ""
        results, listing = None, []
        if cache is not None and contract is None and not need_index:
            from eagle3lint.run.cache import ResultCache

            key = _result_key(engine, scope, settings, select, ignore, extend_select, baseline, with_fixes)
            results = ResultCache(cache, key)
            listing = _listing(engine, scope, settings)
            hit = results.lookup(fingerprint, listing)
            cached_contract = cache.load_contract(fingerprint) if hit is not None else None
            if hit is not None and cached_contract is not None:
                hit["scope"] = [Path(p) for p in hit.get("scope", [])]
                return CheckResult(engine=engine, contract=cached_contract, options=options, **hit)
        from eagle3lint.model.contract import extract_contract
        from eagle3lint.source.parallel import WorkerPool, parse_serially

        adapter = adapter_for(engine.name)
        with WorkerPool(workers if provider is None else 1) as pool:
            pending = None
            if cache is not None and contract is None:
                contract = cache.load_contract(fingerprint)  # the fingerprint taken above
            if contract is None and pool.enabled:
                # The engine's call sites are scanned in a worker while the models parse.
                pending = pool.submit(extract_contract, engine, adapter.contract_extension)
            index = adapter.build_index(engine, getattr(provider, "texts", None))
            index.provider = provider or (cache.provider(pool.parse) if cache is not None else pool.parse)
            extra_models = settings.engines[engine.name].extra_models if engine.name in settings.engines else ()
            extra_files = [p for item in extra_models for p in ([item] if item.is_file() else iter_python_files(item))]
            # A single file outside the models folders can still be the reporting scope.
            extra_files += [p for p in scope if p.is_file() and p.suffix == ".py"]
            loaded = adapter.load_models(index, scope, extra_files)
            if contract is None:
                contract = pending.result() if pending is not None else extract_contract(engine, adapter.contract_extension)
                if cache is not None:
                    cache.store_contract(fingerprint, contract)
        index.provider = provider or (cache.provider(parse_serially) if cache is not None else None)
        scope = [*scope, *extra_models]
        # The rules load once the parse is under way: the workers forked without them.
        found = adapter.check_context(index, contract, scope, loaded)
        models, unresolved, ctx = found.models, found.unresolved, checked_context(engine.name, found.context)
        ctx.options = options
        result = _evaluate(engine, scope, ctx, models, unresolved, settings, select, ignore, extend_select, baseline)
        fix_inputs: dict[str, str] = {}
        if with_fixes:
            from eagle3lint.fix.attach import attach_fixes

            fix_inputs = attach_fixes(result, tuple(fix_patterns_for(engine.name)), reporting_scope, context=ctx)
        if results is not None and cache is not None and not result.errors:
            inputs = _run_inputs(cache.served, fix_inputs)
            if inputs is not None:
                results.store(fingerprint, listing, inputs, _absent_paths(index), _cacheable(result))
        return result
    finally:
        if gc_was_enabled:
            gc.enable()


def _result_key(
    engine: Engine,
    scope: list[Path],
    settings: Settings,
    select: list[str] | None,
    ignore: list[str] | None,
    extend_select: list[str] | None,
    baseline: Path | None,
    with_fixes: bool,
) -> str:
    """Everything besides file contents that decides a run's result (the package's code and
    the settings' digest name the cache namespace)."""
    import hashlib
    import json

    baseline_path = baseline or settings.baseline
    baseline_digest = ""
    if baseline_path is not None:
        from eagle3lint.settings.baseline import baseline_bytes

        # Read as the run reads it: a folder, a pipe or a device is refused, never waited on.
        baseline_digest = hashlib.sha256(baseline_bytes(baseline_path)).hexdigest()
    fixes = ""
    if with_fixes:
        from eagle3lint.fix.templates import templates_digest

        fixes = templates_digest(engine.name)
    return json.dumps(
        [
            str(engine.root.resolve()),
            engine.pack.digest,
            settings.to_json(),
            select, ignore, extend_select,
            sorted(tree_path(str(p)) for p in scope),
            str(baseline_path), baseline_digest,
            with_fixes, fixes,
        ],
        sort_keys=True,
        default=str,
    )


def _run_inputs(served: dict[str, str], fix_inputs: dict[str, str]) -> list[tuple[str, str]] | None:
    """Every file the run's result was made from, with its content hash; None when a file read
    twice differed (it changed during the run: nothing is stored)."""
    inputs = dict(served)
    for path, digest in fix_inputs.items():
        if inputs.setdefault(path, digest) != digest:
            return None
    return sorted(inputs.items())


def _listing(engine: Engine, scope: list[Path], settings: Settings) -> list[str]:
    """The files a run starts from: model files, configured out-of-tree models, scope files."""
    from eagle3lint.model.models import model_files

    files = [str(p) for p in model_files(engine)]
    files.extend(engine.plugin_files())
    overrides = settings.engines.get(engine.name)
    for item in overrides.extra_models if overrides else ():
        files.extend(str(p) for p in ([item] if item.is_file() else iter_python_files(item)))
    files.extend(str(p) for p in scope if p.is_file())
    return files


def _absent_paths(index: ProjectIndex) -> list[str]:
    """Files and folders whose appearance would change how names resolve: those of every engine
    module the index looked for and did not find."""
    absent = []
    for name, summary in index.modules.items():
        root = index.engine.source_root_for(name)
        if summary is not None or root is None:
            continue
        base = root.joinpath(*name.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py", base):
            if not candidate.exists():
                absent.append(str(candidate))
    return absent


def _cacheable(result: CheckResult) -> dict[str, object]:
    return {
        "findings": result.findings,
        "errors": result.errors,
        "models": result.models,
        "unresolved": result.unresolved,
        "notes": result.notes,
        "index": None,
        "suppressed": result.suppressed,
        "baselined": result.baselined,
        "suppressed_findings": result.suppressed_findings,
        "baselined_findings": result.baselined_findings,
        "baseline": result.baseline,
        "excluded": result.excluded,
        "scope": [str(p) for p in result.scope],  # plain strings: the cache loads no pathlib
    }


def _open_cache(engine: Engine, settings: Settings, scope: list[Path]) -> Cache | None:
    """The cache, unless the run must go without (``cache.open_cache`` says why, once)."""
    from eagle3lint.common.escape import line_path
    from eagle3lint.run.cache import open_cache

    # The trees a repository may have supplied: where the per-user secret must not lie.
    checked = [(p, f"the PATH {line_path(str(p))}") for p in scope if p.is_dir()]
    checked.append((engine.root, f"the engine tree {line_path(str(engine.root))}"))
    checked += [(p.root, f"the plugin {line_path(str(p.root))}") for p in engine.plugins]
    project = f"the project folder {line_path(str(settings.root))}" if settings.path else "the working directory"
    checked.append((settings.root, project))
    return open_cache(settings.cache_folder, engine, settings.digest(), checked)


def _evaluate(
    engine: Engine,
    scope: list[Path],
    ctx: CheckContext,
    models: list[ModelClass],
    unresolved: list[UnresolvedEntry],
    settings: Settings,
    select: list[str] | None,
    ignore: list[str] | None,
    extend_select: list[str] | None,
    baseline: Path | None,
) -> CheckResult:
    from eagle3lint.checks.verdicts import decide
    from eagle3lint.common.findings import Finding
    from eagle3lint.model.models import in_scope
    from eagle3lint.source.suppressions import apply_suppressions

    index, contract = ctx.index, ctx.contract
    rules = select_rules(
        select if select is not None else settings.select,
        [*settings.ignore, *(ignore or [])],
        [*settings.extend_select, *(extend_select or [])],
        engine.name,
    )
    # Every analysis rule runs, selected or not: a model's verdict comes from every finding on it
    # (selected, suppressed or not: silencing an error does not make a model work). The
    # selection then decides what is reported; a model with no EAGLE-3 code keeps no member
    # findings (E3L020 stands for them).
    analysis = [r for r in select_rules(select=["ALL"], engine=engine.name) if not r.after_suppressions]
    findings: list[Finding] = []
    for rule in analysis:
        if not rule.after_verdicts:
            findings.extend(rule().check(ctx))
    findings, ctx.verdicts = decide(ctx, findings, analysis)
    for rule in analysis:
        if rule.after_verdicts:
            findings.extend(rule().check(ctx))
    _record_codes(models, findings)
    chosen = {rule.code for rule in rules}
    findings = [f for f in findings if f.code in chosen]
    # The project's severities (``[tool.eagle3lint.severity]``): what a finding costs it, after
    # the verdicts, which say what the analysis found.
    _override_severities(findings, settings.severity)
    generated = findings
    findings = [f for f in findings if in_scope(f.path, scope) or _model_in_scope(f, models, scope)]
    # ``exclude``: files not reported on (their models still inform the analysis of others); a
    # finding goes with its file and with its model's (a stub inherited from a base elsewhere).
    excluded = _excluded_paths(models, findings, settings)
    if excluded:
        model_paths = {f"{m.ref.module}.{m.ref.qualname}": m.path for m in models}
        findings = [f for f in findings if f.path not in excluded and model_paths.get(f.qualname) not in excluded]
    findings = _per_file_ignores(findings, settings)
    per_file = {m.path: m.suppressions for m in index.modules.values() if m is not None}
    class_lines = {f"{m.ref.module}.{m.ref.qualname}": (m.path, m.summary.lineno) for m in models}
    outcome = apply_suppressions(findings, per_file, class_lines)
    findings = _settle_replacements(generated, outcome.kept)
    for path, entry in per_file.items():
        if not in_scope(path, scope) or path in excluded:
            continue
        unused = [c for c in entry.comments if (path, c) not in outcome.used]
        if unused:
            ctx.unused_suppressions[path] = unused
    for rule in rules:
        if rule.after_suppressions:
            findings.extend(rule().check(ctx))
    findings.sort(key=Finding.sort_key)
    baselined: list[Finding] = []
    baseline_path = baseline or settings.baseline
    if baseline_path is not None:
        from eagle3lint.settings.baseline import filter_new, read_baseline

        findings, baselined = filter_new(findings, read_baseline(baseline_path), engine)
    # A file both the contract scan and the index read is reported once.
    read = {e for e in {*contract.errors, *index.errors.values()} if in_scope(e.path, scope) or _is_engine_file(e.path, engine)}
    # The packaging of a plugin being checked, wherever its project files are.
    packaging = {e for plugin in engine.plugins for e in plugin.errors}
    errors = sorted(read | packaging, key=lambda e: (e.path, e.message))
    return CheckResult(
        engine, contract, findings, errors, models, unresolved, ctx.notes, index,
        suppressed=len(outcome.suppressed), baselined=len(baselined), scope=scope, options=ctx.options,
        suppressed_findings=sorted(outcome.suppressed, key=Finding.sort_key), baselined_findings=baselined,
        baseline=str(baseline_path) if baseline_path is not None else None, excluded=excluded,
    )


def _record_codes(models: list[ModelClass], findings: list[Finding]) -> None:
    """Each model's finding codes, whatever the selection, suppressions and baseline report:
    the support matrix shows every cause of a verdict."""
    from eagle3lint.checks.verdicts import standing

    by_model: dict[tuple[str, str | None], list[Finding]] = {}
    for finding in findings:
        by_model.setdefault((finding.qualname, finding.variant), []).append(finding)
    for model in models:
        own = standing(by_model.get((f"{model.ref.module}.{model.ref.qualname}", model.variant), []))
        model.codes = sorted({f.code for f in own})


def _override_severities(findings: list[Finding], overrides: dict[str, str]) -> None:
    """The longest configured code or prefix matching each finding's code decides."""
    if not overrides:
        return
    ordered = sorted(overrides.items(), key=lambda item: -len(item[0]))
    for finding in findings:
        for code, level in ordered:
            if code == "ALL" or finding.code.startswith(code):
                finding.severity = level
                break


def fails(findings: list[Finding], threshold: str) -> bool:
    """Whether any finding is at or above ``threshold`` (error > warning > info)."""
    from eagle3lint.common.findings import SEVERITY_ORDER

    limit = SEVERITY_ORDER[threshold]
    return any(SEVERITY_ORDER.get(f.severity, 0) <= limit for f in findings)


def _settle_replacements(generated: list[Finding], kept: list[Finding]) -> list[Finding]:
    """One gap, one finding: a finding that stands for others of its class (``data["replaces"]``:
    pairs of code and member) hides them. Suppressions decide first, finding by finding: when
    the standing finding is silenced the ones it stood for are reported; when every one it
    stood for is silenced, so is it."""

    def key(f: Finding) -> tuple[str, str | None, str, str]:
        return (f.qualname, f.variant, f.code, f.method)

    made = {key(f) for f in generated}
    left = {key(f) for f in kept}
    hidden: set[tuple[str, str | None, str, str]] = set()
    silenced: set[int] = set()
    for finding in kept:
        stood_for = [p for c, m in finding.data.get("replaces", ()) if (p := (finding.qualname, finding.variant, c, m)) in made]
        if stood_for and not any(p in left for p in stood_for):
            silenced.add(id(finding))
        hidden.update(stood_for)
    return [f for f in kept if id(f) not in silenced and key(f) not in hidden]


def _per_file_ignores(findings: list[Finding], settings: Settings) -> list[Finding]:
    if not settings.per_file_ignores:
        return findings
    from eagle3lint.settings.path_patterns import matches

    root = settings.root
    kept = []
    for finding in findings:
        codes = [c for pattern, codes in settings.per_file_ignores.items() if matches(finding.path, [pattern], root) for c in codes]
        if not any(finding.code.startswith(c) or c == "ALL" for c in codes):
            kept.append(finding)
    return kept


def _excluded_paths(models: list[ModelClass], findings: list[Finding], settings: Settings) -> frozenset[str]:
    """The files of the run's models and findings that ``exclude``/``extend-exclude`` name."""
    patterns = [*settings.exclude, *settings.extend_exclude]
    if not patterns:
        return frozenset()
    from eagle3lint.settings.path_patterns import matches

    paths = {m.path for m in models} | {f.path for f in findings}
    return frozenset(p for p in paths if matches(p, patterns, settings.root, folders=True))


def _model_in_scope(finding: Finding, models: list[ModelClass], scope: list[Path]) -> bool:

    for model in models:
        if finding.qualname == f"{model.ref.module}.{model.ref.qualname}":
            return model.in_scope(scope)
    return False


def _is_engine_file(path: str, engine: Engine) -> bool:
    try:
        Path(tree_path(path)).relative_to(engine.root.resolve())
    except ValueError:
        return False
    return True


__all__ = ["CheckResult", "build_index", "fails", "run_check", "select_rules"]
