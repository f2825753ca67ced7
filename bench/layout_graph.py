"""The package drawn as a house: modules as rooms, imports as arrows, stages as storeys.

Reads every module of ``eagle3lint/`` with the standard library's ``ast`` (nothing is imported)
and prints:

- rooms (modules, packages' ``__init__`` included) and arrows (an import of one module by
  another), split by where the import stands: at module level, inside a function (run late), or
  under ``if TYPE_CHECKING:`` (types only);
- floors: the longest chain of imports, counted in levels, once every cycle is collapsed into
  one room (all arrows);
- arrows that run back up across stages: a module of a lower stage importing one of a higher
  stage (the stage order is ``STAGES`` below, bottom first);
- cycles: among module-level and type-level arrows (``TYPE_CHECKING`` imports included), and
  among all arrows;
- modules over ``MAX_LINES`` lines.

    python bench/layout_graph.py [--root eagle3lint] [--list]

``--list`` also prints every back-up arrow and the modules on each floor. An edge goes to the
module named (``from a.b import c`` names ``a.b.c`` when that is a module, else ``a.b``).
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MAX_LINES = 700

# The stages, bottom first; a module belongs to the stage of the longest prefix that names it.
PACKAGE = "eagle3lint"
STAGES: list[tuple[str, tuple[str, ...]]] = [
    ("common", ("", "common")),  # "": the package itself (``__version__``)
    ("source", ("source",)),
    ("model", ("model",)),
    ("checks", ("checks",)),
    ("fix", ("fix",)),
    ("verify", ("verify",)),
    ("enginerun", ("enginerun",)),
    ("engines", ("engines",)),
    ("fetch", ("fetch",)),
    ("report", ("report",)),
    ("settings", ("settings",)),
    ("run", ("run",)),
    ("cli", ("commands", "cli", "__main__")),
]
# The flat layout before issue 28 (52 loose modules), staged the same way, so that the figures
# can be read on an older tree too (``--root`` of a checkout of it). Names are relative to the
# package: a tree-wide rename of the modules leaves them be.
FLAT_LAYOUT: dict[str, tuple[str, ...]] = {
    "common": (
        "errors", "findings", "locations", "outcomes", "lines", "escape", "safe_io", "rule_codes",
        "interrupts",
    ),
    "source": (
        "ast_names", "ast_strings", "capture_facts", "suppressions", "summary", "sources",
        "snippets", "parallel", "index", "plugins", "rulepack", "engine",
    ),
    "model": (
        "contract", "launch_checks", "launch_options", "registrations", "capture", "inference",
        "hf_types", "models", "result", "ports", "adapter",
    ),
    "checks": ("verdicts",),
    "fetch": (
        "pip_index", "remote_zip", "release_query", "releases", "libraries", "engine_finder",
        "engine_scope", "file_scope",
    ),
    "settings": ("config", "settings_view", "baseline", "path_patterns"),
    "run": (
        "cache", "cache_prune", "runner", "history", "settings_load", "fix.session", "fix.tally",
        "fix.recheck", "verify.run", "verify.preflight", "verify.report",
    ),
    "cli": ("fix.cli", "verify.cli", "enginerun.cli"),
}

MODULE, FUNCTION, TYPES = "module", "function", "type"


def modules(root: Path) -> dict[str, Path]:
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import with where it stands: module level, in a function, under TYPE_CHECKING."""
    found: list[tuple[ast.Import | ast.ImportFrom, str]] = []

    def visit(node: ast.AST, kind: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                found.append((child, kind))
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                visit(child, FUNCTION if kind == MODULE else kind)
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for statement in child.body:
                    visit_one(statement, TYPES)
                for statement in child.orelse:
                    visit_one(statement, kind)
            else:
                visit(child, kind)

    def visit_one(node: ast.AST, kind: str) -> None:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append((node, kind))
        else:
            visit(node, kind)

    visit(tree, MODULE)
    return found


def import_graph(root: Path) -> tuple[dict[str, dict[str, set[str]]], dict[str, int]]:
    """module -> {imported module -> kinds}, and each module's line count."""
    mods = modules(root)
    top = root.name
    graph: dict[str, dict[str, set[str]]] = {}
    sizes: dict[str, int] = {}
    for name, path in mods.items():
        text = path.read_text(encoding="utf-8")
        sizes[name] = len(text.splitlines())
        tree = ast.parse(text)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: dict[str, set[str]] = {}
        for node, kind in _imports(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    parts = package.split(".")
                    base = parts[: len(parts) - (node.level - 1)]
                    target = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    target = node.module or ""
                for alias in node.names:
                    candidate = f"{target}.{alias.name}"
                    targets.append(candidate if candidate in mods else target)
            for target in targets:
                if target.split(".")[0] != top:
                    continue
                while target not in mods and "." in target:
                    target = target.rpartition(".")[0]
                if target in mods and target != name:
                    edges.setdefault(target, set()).add(kind)
        graph[name] = edges
    return graph, sizes


def stage_of(module: str) -> int:
    """The stage's place in ``STAGES`` (bottom first), -1 for a module in none."""
    order = [name for name, _ in STAGES]
    prefixes = [(name, p) for name, ps in STAGES for p in ps]
    prefixes += [(name, p) for name, ps in FLAT_LAYOUT.items() for p in ps]
    best, best_len = -1, -1
    for name, prefix in prefixes:
        full = f"{PACKAGE}.{prefix}" if prefix else PACKAGE
        if (module == full or module.startswith(full + ".")) and len(full) > best_len:
            best, best_len = order.index(name), len(full)
    return best


def components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components (Tarjan, iterative), each sorted."""
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
                found.append(sorted(component))
    return found


def floors(graph: dict[str, set[str]]) -> dict[str, int]:
    """Each module's floor: 1 + the highest floor it imports, cycles collapsed into one room."""
    comps = components(graph)
    comp_of = {m: i for i, c in enumerate(comps) for m in c}
    # Tarjan emits a component after every component it reaches: one pass in order suffices.
    level: dict[int, int] = {}
    for i, comp in enumerate(comps):
        below = {comp_of[t] for m in comp for t in graph[m]} - {i}
        level[i] = 1 + max((level[j] for j in below), default=0)
    return {m: level[comp_of[m]] for m in graph}


def room_of(module: str) -> str:
    """The room a module stands in: the package's own entry it belongs to (a loose module, or a
    folder with everything under it)."""
    return ".".join(module.split(".")[:2])


def rooms(graph: dict[str, dict[str, set[str]]]) -> dict[str, dict[str, set[str]]]:
    out: dict[str, dict[str, set[str]]] = {}
    for module, targets in graph.items():
        edges = out.setdefault(room_of(module), {})
        for target, kinds in targets.items():
            if room_of(target) != room_of(module):
                edges.setdefault(room_of(target), set()).update(kinds)
    return out


def _strongest(kinds: set[str]) -> str:
    # An arrow counts once, as its strongest import: module level, else types, else late.
    return MODULE if MODULE in kinds else TYPES if TYPES in kinds else FUNCTION


class Figures:
    def __init__(self, graph: dict[str, dict[str, set[str]]]) -> None:
        plain = {m: set(targets) for m, targets in graph.items()}
        typed = {m: {t for t, k in targets.items() if k - {FUNCTION}} for m, targets in graph.items()}
        self.kinds = {MODULE: 0, FUNCTION: 0, TYPES: 0}
        for targets in graph.values():
            for edge_kinds in targets.values():
                self.kinds[_strongest(edge_kinds)] += 1
        self.rooms = len(graph)
        self.level = floors(plain)
        self.floors = max(self.level.values(), default=0)
        self.type_cycles = [c for c in components(typed) if len(c) > 1]
        self.all_cycles = [c for c in components(plain) if len(c) > 1]

    def arrows(self) -> str:
        k = self.kinds
        return (
            f"{sum(k.values())} (module-level {k[MODULE]}, type-level only {k[TYPES]}, "
            f"function-level only {k[FUNCTION]})"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--root", default=str(REPO / "eagle3lint"), help="the package folder")
    parser.add_argument("--list", action="store_true", help="print the back-up arrows and floors")
    args = parser.parse_args()
    graph, sizes = import_graph(Path(args.root))
    house = Figures(rooms(graph))
    detail = Figures(graph)
    unstaged = sorted(m for m in graph if stage_of(m) < 0)
    back = sorted(
        (m, t, sorted(k))
        for m, targets in graph.items()
        for t, k in targets.items()
        if stage_of(m) >= 0 and stage_of(t) > stage_of(m)
    )
    big = sorted(((sizes[m], m) for m in sizes if sizes[m] > MAX_LINES), reverse=True)
    loose = [r for r in house.level if r in graph and not any(m.startswith(r + ".") for m in graph)]

    print("the house (rooms: the package's top-level modules and folders, each folder one room)")
    print(f"  rooms: {house.rooms} ({len(loose)} of them loose modules)")
    print(f"  arrows: {house.arrows()}")
    print(f"  floors: {house.floors}")
    print(f"  type-level cycles (module-level + TYPE_CHECKING arrows): {len(house.type_cycles)}")
    print(f"  cycles among all arrows (function-level included): {len(house.all_cycles)}")
    print("modules")
    print(f"  modules: {detail.rooms}, arrows: {detail.arrows()}")
    print(f"  floors (longest module chain): {detail.floors}")
    print(f"  type-level cycles: {len(detail.type_cycles)}, all cycles: {len(detail.all_cycles)}")
    print(
        f"  arrows back up across stages: {len(back)}"
        f" (stages, bottom first: {' < '.join(name for name, _ in STAGES)})"
    )
    print(f"  modules over {MAX_LINES} lines: {len(big)}" + "".join(f"\n    {m} ({n})" for n, m in big))
    if unstaged:
        print("  modules in no stage: " + ", ".join(unstaged))
    for cycle in house.type_cycles:
        print("  type-level cycle among rooms: " + " <-> ".join(cycle))
    if args.list:
        print("\nback-up arrows:")
        for m, t, k in back:
            print(f"  {m} [{STAGES[stage_of(m)][0]}] -> {t} [{STAGES[stage_of(t)][0]}] ({', '.join(k)})")
        print("\nfloors of the house:")
        for f in range(house.floors, 0, -1):
            print(f"  {f}: " + " ".join(sorted(m for m in house.level if house.level[m] == f)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
