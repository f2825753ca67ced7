"""The project index: module summaries linked across files.

Modules are parsed on demand (a base class in ``layers/`` is parsed only when a model inherits
from it), so the analysis scope is the whole engine while the cost stays near the reporting
scope. Names resolve through imports, aliases, re-exports and star imports; anything that leaves
the engine package is *external*, and anything that cannot be followed is *unknown* — which the
checks treat as "cannot prove", never as an error.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from eagle3lint.common.findings import FileError
from eagle3lint.source.engine import Engine
from eagle3lint.source.snippets import SnippetReader
from eagle3lint.source.sources import ParseRequest, module_name, parse_module, tree_path
from eagle3lint.source.summary_types import (
    ClassSummary,
    Construction,
    FunctionSummary,
    ModuleSummary,
)
from eagle3lint.source.summary_walk import (
    dotted,
    final_constructions,
)


@dataclass(frozen=True)
class ClassRef:
    module: str
    qualname: str

    def __str__(self) -> str:
        return f"{self.module}.{self.qualname}"


@dataclass(frozen=True)
class FunctionRef:
    module: str
    name: str


@dataclass(frozen=True)
class ModuleRef:
    module: str


@dataclass(frozen=True)
class External:
    qualified: str


@dataclass(frozen=True)
class Unknown:
    reason: str


Resolved = ClassRef | FunctionRef | ModuleRef | External | Unknown


@dataclass
class MemberLookup:
    status: str  # "found" | "missing" | "unknown"
    owner: ClassRef | None = None
    kind: str = ""  # "method" | "property" | "class_attr" | "instance_attr" | "getattr"
    function: FunctionSummary | None = None
    reason: str = ""
    via_getattr: str | None = None  # attribute that __getattr__ forwards to


@dataclass
class Mro:
    classes: list[ClassRef] = field(default_factory=list)
    unknown_bases: list[str] = field(default_factory=list)


# A summary source lets the cache or a process pool supply parsed modules.
SummaryProvider = Callable[[list[ParseRequest]], list[ModuleSummary | FileError]]


# Steps (module-level name lookups) one resolution may take before it is given up as Unknown.
# Star imports that import one another make the routes to try multiply; real engine trees need
# a handful of steps (sglang 0.5.23, vllm 0.18.0: 3 at most).
LOOKUP_BUDGET = 1_000
# How deep imports, aliases and star imports are followed for one name.
MAX_LOOKUP_DEPTH = 24
# What an Unknown owed to a depth or budget cut depends on: no frame may memoise it.
_CUT = -1


def _serial_provider(requests: list[ParseRequest]) -> list[ModuleSummary | FileError]:
    return [parse_module(r) for r in requests]


class ProjectIndex:
    def __init__(
        self,
        engine: Engine,
        walk_names: frozenset[str],
        provider: SummaryProvider | None = None,
    ) -> None:
        self.engine = engine
        self.walk_names = walk_names
        self.provider: SummaryProvider | None = provider
        self.modules: dict[str, ModuleSummary | None] = {}
        self.errors: dict[str, FileError] = {}
        self._mro_cache: dict[ClassRef, Mro] = {}
        # Module-level lookups already settled, by (module, name): star imports reach the same
        # module by many routes, and each lookup is done once.
        self._settled: dict[tuple[str, str], Resolved] = {}
        # The lookups in progress (key -> position on the stack), and for each the lowest
        # position of an unfinished lookup its answer leaned on (a cycle cut short there).
        self._active: dict[tuple[str, str], int] = {}
        self._leans_on: list[int] = []
        self._steps = 0
        # Function bodies re-read on demand (a factory method's ``return X(...)``); adapters
        # hand it the fixer's edited texts.
        self.snippets = SnippetReader()
        # What each factory method returns, by (file, first line, last line): read once.
        self._returns: dict[tuple[str, int, int], list[ast.expr] | None] = {}

    # ---- loading -----------------------------------------------------------------------
    def request_for(self, path: Path) -> ParseRequest:
        # A linked file keeps the link's name, inside the tree: the engine imports it so.
        path = Path(tree_path(str(path)))
        for root in (self.engine.root, *(p.root for p in self.engine.plugins)):
            try:
                name, is_package = module_name(root, path)
                break
            except ValueError:
                continue
        else:
            # An out-of-tree model (configured extra-models): a name no engine module can take.
            name, is_package = "__extra__." + ".".join(path.with_suffix("").parts[1:]).replace("-", "_"), False
        return ParseRequest(str(path), name, is_package, self.walk_names, self.engine.pack.capture)

    def load_files(self, paths: Iterable[Path]) -> list[ModuleSummary]:
        provider = self.provider or _serial_provider
        requests = []
        wanted: set[str] = set()
        for path in paths:
            request = self.request_for(path)
            if request.module not in self.modules and request.module not in wanted:
                wanted.add(request.module)
                requests.append(request)
        loaded = []
        for request, result in zip(requests, provider(requests), strict=False):
            if isinstance(result, FileError):
                self.errors[result.path] = result
                self.modules[request.module] = None
            else:
                self.modules[request.module] = result
                loaded.append(result)
        return loaded

    def _path_for(self, module: str) -> Path | None:
        root = self.engine.source_root_for(module)
        if root is None:
            return None
        base = root.joinpath(*module.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None

    def module(self, name: str) -> ModuleSummary | None:
        if name in self.modules:
            return self.modules[name]
        path = self._path_for(name)
        if path is None:
            self.modules[name] = None
            return None
        self.load_files([path])
        return self.modules.get(name)

    def is_module(self, name: str) -> bool:
        root = self.engine.source_root_for(name)
        return self.module(name) is not None or (root is not None and root.joinpath(*name.split(".")).is_dir())

    def is_engine_name(self, qualified: str) -> bool:
        """A name in a package the run reads (the engine's, or a plugin's)."""
        return self.engine.owns(qualified)

    # ---- name resolution -----------------------------------------------------------------
    def resolve(self, module: str, dotted_name: str, _depth: int = 0) -> Resolved:
        """Resolve ``dotted_name`` as written in ``module``."""
        if _depth > MAX_LOOKUP_DEPTH:
            self._lean_on(_CUT)
            return Unknown(f"import cycle while resolving {dotted_name}")
        head, _, rest = dotted_name.partition(".")
        first = self._resolve_in_module(module, head, _depth)
        if not rest or isinstance(first, (External, Unknown)):
            if isinstance(first, External) and rest:
                return External(f"{first.qualified}.{rest}")
            return first
        return self._resolve_attribute_chain(first, rest.split("."), _depth)

    def _resolve_attribute_chain(self, start: Resolved, parts: list[str], depth: int) -> Resolved:
        current = start
        for part in parts:
            if isinstance(current, ModuleRef):
                current = self._resolve_in_module(current.module, part, depth + 1)
            elif isinstance(current, ClassRef):
                nested = f"{current.qualname}.{part}"
                summary = self.module(current.module)
                if summary and nested in summary.classes:
                    current = ClassRef(current.module, nested)
                else:
                    return Unknown(f"attribute {part} of class {current}")
            elif isinstance(current, External):
                current = External(f"{current.qualified}.{part}")
            else:
                return current
        return current

    def resolve_qualified(self, qualified: str, depth: int = 0) -> Resolved:
        """Resolve a fully qualified ``pkg.mod.Name`` (an import target)."""
        if not self.is_engine_name(qualified):
            return External(qualified)
        if self.module(qualified) is not None:
            return ModuleRef(qualified)
        parent, _, name = qualified.rpartition(".")
        if not parent:
            return ModuleRef(qualified) if self.is_module(qualified) else Unknown(f"module {qualified} not found")
        if self.module(parent) is None:
            if self.is_module(qualified):
                return ModuleRef(qualified)
            outer = self.resolve_qualified(parent, depth + 1)
            if isinstance(outer, ClassRef):
                return self._resolve_attribute_chain(outer, [name], depth)
            return Unknown(f"module {parent} not found in the engine tree")
        return self._resolve_in_module(parent, name, depth + 1)

    def _lean_on(self, position: int) -> None:
        if self._leans_on:
            self._leans_on[-1] = min(self._leans_on[-1], position)

    def _resolve_in_module(self, module: str, name: str, depth: int) -> Resolved:
        """``name`` as seen in ``module``, memoised per (module, name).

        A lookup met again while it is still in progress is a cycle (star imports of one
        another): that route answers Unknown and the lookup further up tries the others. An
        answer that leaned on such a cut short lookup above it is not memoised (from another
        start the route may lead somewhere); like Tarjan's low-link, a frame's answer is
        memoised only when nothing above it was cut short."""
        key = (module, name)
        settled = self._settled.get(key)
        if settled is not None:
            return settled
        if key in self._active:
            self._lean_on(self._active[key])
            return Unknown(f"import cycle while resolving {name}")
        if not self._active:
            self._steps = 0  # each outermost lookup gets the whole budget
        self._steps += 1
        if depth > MAX_LOOKUP_DEPTH:
            self._lean_on(_CUT)
            return Unknown(f"import cycle while resolving {name}")
        if self._steps > LOOKUP_BUDGET:
            # The same outermost lookup would run out again: only it may keep the answer.
            self._lean_on(0)
            return Unknown(f"gave up resolving {name}: too many import routes (star imports)")
        position = len(self._active)
        self._active[key] = position
        self._leans_on.append(position)
        try:
            found = self._lookup_in_module(module, name, depth)
        finally:
            del self._active[key]
            leaned = self._leans_on.pop()
        self._lean_on(leaned)
        if leaned >= position:
            self._settled[key] = found
        return found

    def _lookup_in_module(self, module: str, name: str, depth: int) -> Resolved:
        summary = self.module(module)
        if summary is None:
            candidate = f"{module}.{name}"
            if self.is_module(candidate):
                return ModuleRef(candidate)
            err = self.errors.get(str(self._path_for(module)))
            if err is not None:
                return Unknown(f"{module} could not be parsed")
            return Unknown(f"module {module} not found")
        if name in summary.classes:
            return ClassRef(module, name)
        if name in summary.aliases:
            target = summary.aliases[name]
            if target.split(".")[0] != name:
                return self.resolve(module, target, depth + 1)
        if name in summary.imports:
            return self.resolve_qualified(summary.imports[name], depth + 1)
        if name in summary.functions:
            return FunctionRef(module, name)
        submodule = f"{module}.{name}"
        if summary.is_package and self.is_module(submodule):
            return ModuleRef(submodule)
        for star in summary.star_imports:
            if self.is_engine_name(star):
                found = self._resolve_in_module(star, name, depth + 1)
                if not isinstance(found, Unknown) or self._steps > LOOKUP_BUDGET:
                    return found
            else:
                return Unknown(f"{name} may come from 'from {star} import *'")
        if name in dir(__builtins__) or name in ("object",):
            return External(f"builtins.{name}")
        return Unknown(f"name {name} not defined in {module}")

    # ---- classes ---------------------------------------------------------------------------
    def class_summary(self, ref: ClassRef) -> ClassSummary | None:
        summary = self.module(ref.module)
        return summary.classes.get(ref.qualname) if summary else None

    def module_of(self, ref: ClassRef) -> ModuleSummary | None:
        return self.module(ref.module)

    def bases(self, ref: ClassRef) -> list[Resolved]:
        cls = self.class_summary(ref)
        if cls is None:
            return []
        # Nested classes resolve names in their module, like Python does at class-creation time.
        return [self._resolve_base(ref, base) for base in cls.bases]

    def _resolve_base(self, ref: ClassRef, base: str) -> Resolved:
        head, _, rest = base.partition(".")
        if head != ref.qualname:
            return self.resolve(ref.module, base)
        # ``from pkg.llama import LlamaForCausalLM`` then ``class LlamaForCausalLM(LlamaForCausalLM)``:
        # the base is the name as bound before the class statement rebinds it (the import).
        summary = self.module(ref.module)
        target = summary.imports.get(head) if summary is not None else None
        if target is None:
            return Unknown(f"{ref.qualname} names itself as its base")
        return self.resolve_qualified(f"{target}.{rest}" if rest else target)

    def mro(self, ref: ClassRef) -> Mro:
        cached = self._mro_cache.get(ref)
        if cached is not None:
            return cached
        result = Mro()
        self._mro_cache[ref] = result  # guards against inheritance cycles
        seen: set[ClassRef] = set()

        def visit(current: ClassRef) -> None:
            if current in seen:
                return
            seen.add(current)
            result.classes.append(current)
            for base in self.bases(current):
                if isinstance(base, ClassRef):
                    visit(base)
                elif isinstance(base, External):
                    if not self.engine.pack.is_external_without_members(base.qualified):
                        result.unknown_bases.append(base.qualified)
                elif isinstance(base, Unknown):
                    result.unknown_bases.append(base.reason)
                else:
                    result.unknown_bases.append(f"{base} is not a class")

        visit(ref)
        # Depth-first, left-to-right, then moved so a shared base comes after all its subclasses
        # (the C3 order for the diamond shapes model code uses).
        result.classes = _c3_like(result.classes, self)
        return result

    def lookup(self, ref: ClassRef, member: str) -> MemberLookup:
        mro = self.mro(ref)
        for current in mro.classes:
            cls = self.class_summary(current)
            if cls is None:
                continue
            if member in cls.methods:
                fn = cls.methods[member]
                kind = "property" if fn.is_property else "method"
                return MemberLookup("found", current, kind, fn)
            if member in cls.class_attrs:
                return MemberLookup("found", current, "class_attr")
            if member in cls.instance_attrs:
                return MemberLookup("found", current, "instance_attr")
        if mro.unknown_bases:
            return MemberLookup("unknown", reason="unresolved base " + ", ".join(mro.unknown_bases))
        for current in mro.classes:
            cls = self.class_summary(current)
            if cls is not None and "__getattr__" in cls.methods:
                forward = cls.methods["__getattr__"]
                attrs = sorted({attr for attr, _ in forward.self_chains} | _getattr_targets(forward))
                return MemberLookup(
                    "unknown" if not attrs else "getattr",
                    current,
                    "getattr",
                    forward,
                    reason="__getattr__" if not attrs else "",
                    via_getattr=attrs[0] if attrs else None,
                )
        return MemberLookup("missing")

    def path_classes(self, ref: ClassRef, path: Sequence[str]) -> list[ClassRef] | None:
        """The classes ``self.<path>`` may hold in an instance of ``ref`` (every link followed
        through :meth:`attribute_classes`); None where a link cannot be followed to classes."""
        current = [ref]
        for step in path:
            following: list[ClassRef] = []
            for held in current:
                classes = self.attribute_classes(held, step)
                if not classes or not all(isinstance(c, ClassRef) for c in classes):
                    return None
                following.extend(c for c in classes if isinstance(c, ClassRef))
            current = list(dict.fromkeys(following))
        return current

    def attribute_classes(self, ref: ClassRef, attr: str, _depth: int = 0) -> list[Resolved]:
        """What ``self.<attr>`` holds in instances of ``ref``: the ``__init__`` assignments that
        stand when it returns (the last one, or one per branch where a backbone is chosen by
        config), in the nearest class along the MRO that assigns it (subclasses rebuild
        ``self.model``); or what a property returning another attribute holds."""
        if _depth > 8:
            return [Unknown("attribute chain too deep")]
        for current in self.mro(ref).classes:
            cls = self.class_summary(current)
            if cls is None:
                continue
            fn = cls.methods.get(attr)
            if fn is not None and fn.is_property:
                if fn.returns_self_attr:
                    return self.attribute_classes(ref, fn.returns_self_attr, _depth + 1)
                return [Unknown(f"property {attr} returns a computed value")]
            entry = cls.instance_attrs.get(attr)
            if entry is not None and entry.constructions:
                out: list[Resolved] = []
                for construction in final_constructions(entry.constructions):
                    if construction.callee.startswith("self."):
                        inner = construction.callee[len("self.") :]
                        kind = self._self_callable(ref, inner) if construction.call and "." not in inner else None
                        if kind == "method":
                            out.extend(self._method_returns(ref, inner))
                        elif kind == "class_attr":
                            out.append(self._class_attr_value(ref, inner))
                        elif "." not in inner:
                            out.extend(self.attribute_classes(ref, inner, _depth + 1))
                        else:
                            out.append(self._attribute_path(ref, inner, _depth + 1))
                    elif construction.table and (picked := self.table_classes(current, construction)) is not None:
                        out.extend(picked)
                    else:
                        out.append(self._resolve_in_class(current, cls, construction.callee, ref))
                return out
            if entry is not None:
                return [Unknown(f"self.{attr} is not assigned a constructed object")]
        return []

    # ---- what a construction builds --------------------------------------------------------
    def class_table(self, module: str, name: str, _depth: int = 0) -> tuple[str, list[tuple[str, str]]] | None:
        """The module-level dict literal of classes ``name`` denotes in ``module`` (defined
        there, or imported from another module): (its module, its entries); None otherwise."""
        summary = self.module(module)
        if summary is None or _depth > 4:
            return None
        if name in summary.class_tables:
            return module, summary.class_tables[name]
        qualified = summary.imports.get(name)
        if qualified is None or not self.is_engine_name(qualified):
            return None
        parent, _, short = qualified.rpartition(".")
        return self.class_table(parent, short, _depth + 1) if parent else None

    def table_classes(self, owner: ClassRef, construction: Construction) -> list[Resolved] | None:
        """The classes ``TABLE[key](...)`` may build, in ``owner.__init__``: the entry of a
        literal key, else every entry (the key is a config value); None when ``TABLE`` is not a
        table of names (the call subscripts something else)."""
        found = self.class_table(owner.module, construction.callee)
        if found is None:
            return None
        module, entries = found
        chosen = [value for key, value in entries if key == construction.table_key] or [value for _, value in entries]
        return list(dict.fromkeys(self.resolve(module, value) for value in chosen))

    def _self_callable(self, ref: ClassRef, name: str) -> str | None:
        """"method" or "class_attr" when ``self.<name>(...)`` calls a factory method or a class
        stored in a class attribute."""
        lookup = self.lookup(ref, name)
        if lookup.status != "found":
            return None
        if lookup.kind == "method" and lookup.function is not None and not lookup.function.is_property:
            return "method"
        if lookup.kind == "class_attr":
            return "class_attr"
        return None

    def _method_returns(self, ref: ClassRef, name: str) -> list[Resolved]:
        """The classes ``self.<name>(...)`` constructs: its ``return X(...)`` statements, in the
        override the instance's class really runs (``init_llm`` of each MiniCPM-V version)."""
        lookup = self.lookup(ref, name)
        fn, owner = lookup.function, lookup.owner
        module = self.module(owner.module) if owner else None
        if fn is None or owner is None or module is None:
            return [Unknown(f"self.{name}() cannot be followed")]
        returned = self._returned_values(module.path, fn.lineno, fn.end_lineno)
        if returned is None:
            return [Unknown(f"self.{name}() cannot be read")]
        out = [self._returned_call(ref, owner, name, value) for value in returned]
        return out or [Unknown(f"self.{name}() returns no constructed object")]

    def _returned_values(self, path: str, start: int, end: int) -> list[ast.expr] | None:
        """What a method returns: each ``return X(...)``, and for ``return llm`` the values bound
        to ``llm`` (``llm = Qwen3ForCausalLM(...)``). Read once per method: every class that
        runs the method asks (None: its text cannot be parsed)."""
        key = (path, start, end)
        if key in self._returns:
            return self._returns[key]
        tree = self.snippets.parse(path, start, end)
        values: list[ast.expr] | None = None
        if tree is not None:
            bound: dict[str, list[ast.expr]] = {}
            returns: list[ast.Return] = []
            for node in ast.walk(tree):
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    bound.setdefault(node.targets[0].id, []).append(node.value)
                elif isinstance(node, ast.Return):
                    returns.append(node)
            values = []
            for node in returns:
                if isinstance(node.value, ast.Name) and node.value.id in bound:
                    values.extend(bound[node.value.id])
                elif isinstance(node.value, ast.Call):
                    values.append(node.value)
        self._returns[key] = values
        return values

    def _returned_call(self, ref: ClassRef, owner: ClassRef, name: str, value: ast.expr) -> Resolved:
        """The class a returned ``X(...)`` builds; ``self.model_cls(...)`` reads the class
        attribute the instance's class has."""
        callee = dotted(value.func) if isinstance(value, ast.Call) else None
        if callee and not callee.startswith("self."):
            return self.resolve(owner.module, callee)
        attr = callee[len("self.") :] if callee else ""
        if attr and "." not in attr and self._self_callable(ref, attr) == "class_attr":
            return self._class_attr_value(ref, attr)
        return Unknown(f"self.{name}() returns a computed value")

    def _class_attr_value(self, ref: ClassRef, name: str) -> Resolved:
        """``model_cls = FooModel`` in the class body (the nearest along the MRO)."""
        lookup = self.lookup(ref, name)
        owner = lookup.owner
        cls = self.class_summary(owner) if owner else None
        module = self.module(owner.module) if owner else None
        if owner is None or cls is None or module is None or name not in cls.class_attrs:
            return Unknown(f"self.{name} cannot be followed")
        line = cls.class_attrs[name]
        stmt = self.snippets.statement_at(module.path, line, line, line)
        value = getattr(stmt, "value", None)
        target = dotted(value) if value is not None else None
        if target is None:
            return Unknown(f"{owner.qualname}.{name} is not a plain class name")
        return self.resolve(owner.module, target)
    def resolve_in_init(self, owner: ClassRef, dotted_name: str, instance: ClassRef | None = None) -> Resolved:
        """A name as ``owner.__init__`` sees it, for an instance of ``instance``: a constructor
        parameter is what a subclass passes for it or its default (as for ``self.x = Name(...)``)."""
        cls = self.class_summary(owner)
        if cls is None:
            return Unknown(f"cannot read {owner.qualname}")
        return self._resolve_in_class(owner, cls, dotted_name, instance)

    def _resolve_in_class(self, owner: ClassRef, cls: ClassSummary, dotted_name: str, instance: ClassRef | None = None) -> Resolved:
        """A name used in ``owner.__init__``: its local imports first, then its module."""
        head, _, rest = dotted_name.partition(".")
        if head in cls.init_param_defaults:
            # A constructor parameter: what the instance's class hands it through
            # ``super().__init__(...)``, else the class it defaults to. A default is evaluated
            # where the function is defined, so it names something of the module, never a
            # parameter or an import of the body (``model_cls=model_cls`` is the module's).
            passed = self._passed_down(instance, owner, head) if instance is not None else None
            if passed is not None:
                return passed
            head_default = cls.init_param_defaults[head]
            return self.resolve(owner.module, head_default + (f".{rest}" if rest else ""))
        if head in cls.local_imports:
            target = cls.local_imports[head] + (f".{rest}" if rest else "")
            return self.resolve_qualified(target)
        return self.resolve(owner.module, dotted_name)

    def _passed_down(self, instance: ClassRef, owner: ClassRef, param: str) -> Resolved | None:
        """The value a subclass between ``instance`` and ``owner`` passes for ``owner.__init__``'s
        ``param`` (``super().__init__(config, language_model_cls)`` in
        ``Qwen3_5ForConditionalGeneration``), as the class it names; None when none does."""
        classes = self.mro(instance).classes
        if owner not in classes:
            return None
        owner_init = getattr(self.class_summary(owner), "methods", {}).get("__init__")
        if owner_init is None:
            return None
        position = owner_init.params.positional.index(param) if param in owner_init.params.positional else None
        # The nearest subclass that calls super().__init__ decides (it is the one that runs).
        for current in reversed(classes[: classes.index(owner)]):
            summary = self.class_summary(current)
            init = summary.methods.get("__init__") if summary is not None else None
            if init is None or init.super_init_args is None:
                continue
            positional, keywords = init.super_init_args
            value = keywords.get(param)
            if value is None and position is not None and position < len(positional):
                value = positional[position]
            if value is None:
                return None
            head, _, rest = value.partition(".")
            if summary is not None and head in summary.init_param_defaults:
                value = summary.init_param_defaults[head] + (f".{rest}" if rest else "")
            elif summary is not None and head in init.params.positional + init.params.keyword_only:
                return None  # a parameter without a default: chosen by the caller
            return self.resolve(current.module, value)
        return None

    def _attribute_path(self, ref: ClassRef, path: str, depth: int) -> Resolved:
        """``self.language_model.model`` -> the class of ``model`` inside the language model."""
        parts = path.split(".")
        holders: list[Resolved] = [ref]
        for part in parts:
            next_holders: list[Resolved] = []
            for holder in holders:
                if isinstance(holder, ClassRef):
                    next_holders.extend(self.attribute_classes(holder, part, depth + 1))
            if not next_holders:
                return Unknown(f"cannot follow self.{path}")
            holders = next_holders
        return holders[-1]


def _getattr_targets(fn: FunctionSummary) -> set[str]:
    """Attributes a ``__getattr__`` may forward to (``getattr(self.language_model, name)``)."""
    return set(fn.self_reads)


def _c3_like(order: list[ClassRef], index: ProjectIndex) -> list[ClassRef]:
    """Approximate C3: a class moves after every class that lists it as a (transitive) base."""
    position = {ref: i for i, ref in enumerate(order)}
    result = list(order)
    changed = True
    passes = 0
    while changed and passes < len(order):
        changed = False
        passes += 1
        for ref in list(result):
            for base in index.bases(ref):
                if isinstance(base, ClassRef) and base in position:
                    if result.index(base) < result.index(ref):
                        result.remove(base)
                        result.insert(result.index(ref) + 1, base)
                        changed = True
    return result
