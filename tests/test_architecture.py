"""The package's layering: engines behind their adapters, a core that knows none of them, no cycles.

Imports are read from the source (every ``import``, function-level ones and those under
``if TYPE_CHECKING:`` included: a type named is a dependency too); an edge goes to the module named
(``from a.b import c`` names ``a.b.c`` when that is a module, else ``a.b``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

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


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names if a.name.startswith("eagle3lint"))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    target = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    target = node.module or ""
                if not target.startswith("eagle3lint"):
                    continue
                for alias in node.names:
                    candidate = f"{target}.{alias.name}"
                    edges.add(candidate if candidate in modules else target)
        graph[name] = {e for e in edges if e in modules and e != name}
    return graph


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
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycles() -> None:
    assert _cycles(GRAPH) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("name", ["sglang", "vllm", "lmdeploy"])
def test_every_adapter_keeps_its_rule_code_table_equal_to_its_rules(name: str) -> None:
    from eagle3lint.engines import adapter_for

    adapter = adapter_for(name)
    assert {rule.code: rule.name for rule in adapter.rules()} == dict(adapter.rule_codes)
