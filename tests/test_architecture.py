"""The package's layering: engines behind their adapters, a core that knows none of them, no cycles.

Imports are read from the source (every ``import``, function-level ones and those under
``if TYPE_CHECKING:`` included: a type named is a dependency too); an edge goes to the module named
(``from a.b import c`` names ``a.b.c`` when that is a module, else ``a.b``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import load_bench_script

PACKAGE = Path(__file__).resolve().parent.parent / "eagle3lint"
REGISTRY = "eagle3lint.engines"
# The code that drives a run: the only part of the core that may ask the registry for engines.
UPPER = (
    "eagle3lint.__main__",
    "eagle3lint.cli",
    "eagle3lint.run.runner",
    "eagle3lint.run.cache",
    "eagle3lint.run.settings_load",
    "eagle3lint.settings.baseline",
    "eagle3lint.settings.view",
    "eagle3lint.fetch.engine_finder",
    "eagle3lint.fetch.engine_scope",
    "eagle3lint.fetch.file_scope",
    "eagle3lint.fetch.releases",
    "eagle3lint.fetch.release_query",
    "eagle3lint.fetch.pip_index",
    "eagle3lint.fetch.remote_zip",
    "eagle3lint.run.history",
    "eagle3lint.fetch.libraries",
    "eagle3lint.report",
    "eagle3lint.run.fix_session",
    "eagle3lint.commands.fix",
    "eagle3lint.run.fix_tally",
    "eagle3lint.run.fix_recheck",
    "eagle3lint.run.verify_run",
    "eagle3lint.commands.verify",
    "eagle3lint.run.preflight",
    "eagle3lint.run.verify_report",
    "eagle3lint.commands.engine_run",
)
# What the adapter base is, and the packages above it: the machinery it hands out (rules, fixes,
# the verify driver) is named through its ports, never imported.
BASE = ("eagle3lint.model.adapter", "eagle3lint.model.ports")
ABOVE_BASE = ("eagle3lint.checks", "eagle3lint.fix", "eagle3lint.verify")
# The settings: read and validated against a vocabulary the caller gives.
SETTINGS = "eagle3lint.settings.config"


# The benchmark's reader is the one import reader: the layout figures and these rules must agree
# on what an import is.
LAYOUT = load_bench_script("layout_graph")


def import_graph() -> dict[str, set[str]]:
    """module -> the modules it imports, whatever kind of import (a type named is a dependency too)."""
    graph, _sizes = LAYOUT.import_graph(PACKAGE)
    return {module: set(targets) for module, targets in graph.items()}


def _is(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _engine_of(module: str) -> str | None:
    if _is(module, REGISTRY) and module != REGISTRY:
        return module.split(".")[2]
    return None


def _is_upper(module: str) -> bool:
    return any(_is(module, u) for u in UPPER)


GRAPH = import_graph()


def _reach(start: str) -> set[str]:
    seen: set[str] = set()
    pending = [start]
    while pending:
        module = pending.pop()
        for target in GRAPH.get(module, ()):
            if target not in seen:
                seen.add(target)
                pending.append(target)
    return seen


def test_type_only_imports_are_in_the_graph() -> None:
    # ``adapter`` names ``ModelClass`` only for type checking: the graph must still see it.
    assert "eagle3lint.model.models" in GRAPH["eagle3lint.model.adapter"]


def test_the_engines_exist_as_packages_with_an_adapter() -> None:
    from eagle3lint.engines import ENGINE_NAMES

    engines = {_engine_of(m) for m in GRAPH} - {None}
    assert set(ENGINE_NAMES) <= engines
    for engine in engines:
        assert f"{REGISTRY}.{engine}.adapter" in GRAPH, f"{engine} has no adapter module"


def test_the_core_imports_no_engine_package_directly() -> None:
    offenders = sorted(
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        if _engine_of(module) is None and module != REGISTRY
        for target in targets
        if _engine_of(target) is not None
    )
    assert not offenders, "core modules must ask the registry (eagle3lint.engines), not an engine:\n" + "\n".join(offenders)


def test_an_engine_imports_only_itself_and_the_lower_half() -> None:
    offenders = []
    for module, targets in GRAPH.items():
        engine = _engine_of(module)
        if engine is None:
            continue
        for target in targets:
            other = _engine_of(target)
            if (other is not None and other != engine) or target == REGISTRY or _is_upper(target):
                offenders.append(f"{module} -> {target}")
    assert not offenders, "engines build on the lower half only:\n" + "\n".join(sorted(offenders))


def test_the_lower_half_never_reaches_up() -> None:
    offenders = sorted(
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        if _engine_of(module) is None and module != REGISTRY and not _is_upper(module)
        for target in targets
        if target == REGISTRY or _is_upper(target)
    )
    assert not offenders, "the lower half (what adapters build on) must not import the registry or the run drivers:\n" + "\n".join(offenders)


def test_the_adapter_base_depends_on_nothing_above_it() -> None:
    offenders = sorted(
        f"{base} reaches {target}"
        for base in BASE
        for target in _reach(base)
        if any(_is(target, above) for above in ABOVE_BASE) or target == REGISTRY or _is_upper(target) or _engine_of(target) is not None
    )
    assert not offenders, "the adapter base names what it hands out through its ports:\n" + "\n".join(offenders)


def test_the_settings_depend_on_the_lower_half_only() -> None:
    offenders = sorted(
        target for target in _reach(SETTINGS) if target == REGISTRY or _is_upper(target) or _engine_of(target) is not None
    )
    assert not offenders, "the settings are validated against a vocabulary the caller gives:\n" + "\n".join(offenders)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module."""
    return [c for c in LAYOUT.components(graph) if len(c) > 1]


def test_no_import_cycles() -> None:
    assert _cycles(GRAPH) == []


def test_no_module_imports_a_higher_stage() -> None:
    graph, _sizes = LAYOUT.import_graph(PACKAGE)
    offenders = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if LAYOUT.stage_of(module) >= 0 and LAYOUT.stage_of(target) > LAYOUT.stage_of(module)
    )
    unstaged = sorted(m for m in graph if LAYOUT.stage_of(m) < 0)
    assert not unstaged, "every module belongs to a stage (bench/layout_graph.py STAGES): " + ", ".join(unstaged)
    assert not offenders, "data flows one way, stage by stage:\n" + "\n".join(offenders)


def test_the_stage_reader_sees_an_import_that_goes_back_up(tmp_path: Path) -> None:
    package = tmp_path / "eagle3lint"
    (package / "common").mkdir(parents=True)
    (package / "run").mkdir()
    for init in (package / "__init__.py", package / "common" / "__init__.py", package / "run" / "__init__.py"):
        init.write_text("", encoding="utf-8")
    (package / "run" / "driver.py").write_text("X = 1\n", encoding="utf-8")
    (package / "common" / "low.py").write_text("def f():\n    from eagle3lint.run.driver import X\n    return X\n", encoding="utf-8")
    graph, _sizes = LAYOUT.import_graph(package)
    assert "eagle3lint.run.driver" in graph["eagle3lint.common.low"]
    assert LAYOUT.stage_of("eagle3lint.run.driver") > LAYOUT.stage_of("eagle3lint.common.low")


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("name", ["sglang", "vllm", "lmdeploy"])
def test_every_adapter_keeps_its_rule_code_table_equal_to_its_rules(name: str) -> None:
    from eagle3lint.engines import adapter_for

    adapter = adapter_for(name)
    assert {rule.code: rule.name for rule in adapter.rules()} == dict(adapter.rule_codes)
