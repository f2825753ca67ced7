"""One parsed module reduced to the facts the checks need.

A summary is plain data (picklable, cacheable): the index links summaries across files, so a
file is parsed once and its syntax tree is dropped straight after. Only the parts of a module
that can bear on the EAGLE-3 interface are walked (class bodies, ``__init__``, ``__getattr__``,
properties, methods named like interface members, ``forward``), which keeps the cost close to
that of parsing alone.
"""

from __future__ import annotations

import ast

from eagle3lint.common.lines import source_lines
from eagle3lint.source.ast_names import dotted_name
from eagle3lint.source.capture_facts import CaptureSpec
from eagle3lint.source.layout import TopStatement, top_statement, unit_digest
from eagle3lint.source.summary_types import (
    Branch,
    ClassSummary,
    FunctionSummary,
    InstanceAttr,
    ModuleSummary,
    ReusableUnit,
)
from eagle3lint.source.summary_walk import (
    _construction,
    _decorator_names,
    _import_statements,
    _literal_text,
    _param_defaults,
    _string_list,
    _summarize_function,
    dotted,
    try_parts,
)

# Methods whose bodies are always walked, whatever the member list says.
_ALWAYS_WALK = frozenset({"__getattr__"})


# A statement ``source.reuse`` put in place of an earlier version's unit: (the unit, shifted to
# where it lies now), by the stand-in function's name.
Placed = dict[str, ReusableUnit]


class _ModuleBuilder:
    def __init__(
        self,
        module: str,
        path: str,
        is_package: bool,
        walk_names: frozenset[str],
        capture: CaptureSpec | None = None,
        text: str | None = None,
        placed: Placed | None = None,
        lines: list[str] | None = None,
    ) -> None:
        self.summary = ModuleSummary(module=module, path=path, is_package=is_package)
        self.walk_names = walk_names | _ALWAYS_WALK
        self.capture = capture
        self._text = text
        self._lines = lines
        self.placed = placed or {}

    def _source_lines(self) -> list[str]:
        if self._lines is None:
            self._lines = source_lines(self._text or "")
        return self._lines

    def resolve_relative(self, level: int, name: str | None) -> str:
        parts = self.summary.module.split(".")
        if not self.summary.is_package:
            parts = parts[:-1]
        if level > 1:
            parts = parts[: len(parts) - (level - 1)]
        base = ".".join(parts)
        if name:
            return f"{base}.{name}" if base else name
        return base

    def visit_body(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.visit_stmt(stmt)

    def visit_module(self, body: list[ast.stmt]) -> None:
        """The module's statements and its layout; its classes and functions also become
        reusable units (with the text, which their digests are made from)."""
        layout: list[TopStatement] = []
        for stmt in body:
            unit = self.placed.get(stmt.name) if isinstance(stmt, ast.FunctionDef) else None
            if unit is not None:
                self._replay_top(unit)
            elif self._text is not None and isinstance(stmt, ast.ClassDef):
                made: list[tuple[str, ClassSummary]] = []
                methods: list[ReusableUnit] = []
                self.visit_class(stmt, prefix="", made=made, method_units=methods)
                unit = self._unit(stmt, classes=made, methods=methods, top=True)
            elif self._text is not None and isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.visit_stmt(stmt)
                unit = self._unit(stmt, function=self.summary.functions[stmt.name], top=True)
            else:
                self.visit_stmt(stmt)
            if unit is not None:
                self.summary.units.append(unit)
            layout.append(unit.top if unit is not None and unit.top is not None else top_statement(stmt))
        self.summary.layout = tuple(layout)

    def _unit(
        self,
        stmt: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef,
        classes: list[tuple[str, ClassSummary]] | None = None,
        function: FunctionSummary | None = None,
        methods: list[ReusableUnit] | None = None,
        top: bool = False,
    ) -> ReusableUnit:
        lines = self._source_lines()
        first = min([stmt.lineno, *(d.lineno for d in stmt.decorator_list)])
        end = stmt.end_lineno or stmt.lineno
        text = "".join(lines[first - 1 : end])
        return ReusableUnit(
            first=first,
            end=end,
            end_col=stmt.end_col_offset if stmt.end_col_offset is not None else -1,
            head=lines[first - 1],
            length=len(text),
            digest=unit_digest(text),
            classes=classes or [],
            function=function,
            top=top_statement(stmt) if top else None,
            methods=methods or [],
        )

    def _replay_top(self, unit: ReusableUnit) -> None:
        """A module-level unit taken from the earlier version: what visiting it made."""
        if unit.function is not None:
            self.summary.functions[unit.function.name] = unit.function
        for key, cls in unit.classes:
            self._add_class(key, cls)

    def _add_class(self, key: str, cls: ClassSummary) -> None:
        """A class entry (``Outer.Inner`` for a nested class); a module-level name defined
        again is noted, the last definition kept."""
        if "." not in key and key in self.summary.classes:
            self.summary.redefined_classes.append(key)
        self.summary.classes[key] = cls

    def _record_import(self, stmt: ast.Import | ast.ImportFrom, into: dict[str, str]) -> None:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    into[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    into[top] = top
            return
        base = self.resolve_relative(stmt.level, stmt.module) if stmt.level else (stmt.module or "")
        for alias in stmt.names:
            if alias.name == "*":
                if into is self.summary.imports:
                    self.summary.star_imports.append(base)
            else:
                into[alias.asname or alias.name] = f"{base}.{alias.name}"

    def visit_stmt(self, stmt: ast.stmt) -> None:
        s = self.summary
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            self._record_import(stmt, s.imports)
        elif isinstance(stmt, ast.ClassDef):
            self.visit_class(stmt, prefix="", made=[])
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            fn, _ = _summarize_function(stmt, is_method=False, walk=False)
            s.functions[stmt.name] = fn
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            self.visit_module_assign(stmt)
        elif isinstance(stmt, ast.If):
            self.visit_body(stmt.body)
            self.visit_body(stmt.orelse)
        elif (parts := try_parts(stmt)) is not None:
            body, handlers, orelse, final = parts
            for block in (body, *(h.body for h in handlers), orelse, final):
                self.visit_body(block)

    def visit_module_assign(self, stmt: ast.Assign | ast.AnnAssign) -> None:
        s = self.summary
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        value = stmt.value
        if value is None:
            return
        for target in targets:
            if not isinstance(target, ast.Name):
                continue
            name = target.id
            if name == "EntryClass":
                entries: list[str] = []
                elts = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
                for elt in elts:
                    d = dotted(elt)
                    if d:
                        entries.append(d)
                s.entry_class = entries
                s.entry_class_line = stmt.lineno
                continue
            if isinstance(value, (ast.Name, ast.Attribute)):
                d = dotted(value)
                if d:
                    s.aliases[name] = d
            elif isinstance(value, ast.Dict):
                table: dict[str, list[str]] = {}
                for k, v in zip(value.keys, value.values, strict=False):
                    if isinstance(k, ast.Constant) and isinstance(k.value, str):
                        strings = _string_list(v)
                        if strings is not None:
                            table[k.value] = strings
                if table:
                    s.dict_literals[name] = table
                classes = _class_table(value, s.class_tables)
                if classes:
                    s.class_tables[name] = classes
            elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict":
                # Merged registries: ``_X = {**_A, **_B}`` are dicts; ``dict(...)`` rarely used.
                pass
            if isinstance(value, ast.Dict) and any(k is None for k in value.keys):
                merged = s.dict_literals.setdefault(name, {})
                for k, v in zip(value.keys, value.values, strict=False):
                    if k is None and isinstance(v, ast.Name) and v.id in s.dict_literals:
                        for key, val in s.dict_literals[v.id].items():
                            merged.setdefault(key, val)

    def visit_class(
        self, node: ast.ClassDef, prefix: str, made: list[tuple[str, ClassSummary]], method_units: list[ReusableUnit] | None = None
    ) -> None:
        """``made`` gets the classes entries this statement makes, in order; ``method_units``
        (a module-level class) its methods that are reusable alone: those that add nothing to
        the class but their own summary (no ``self.x = ...``, not ``__init__``)."""
        qualname = f"{prefix}{node.name}"
        bases = [b for b in (dotted(base) for base in node.bases) if b]
        cls = ClassSummary(
            name=node.name,
            qualname=qualname,
            lineno=node.lineno,
            col=node.col_offset,
            end_lineno=node.end_lineno or node.lineno,
            bases=bases,
            decorators=_decorator_names(node),
        )
        assigned_by: dict[str, list[str]] = {}  # method -> the attributes it assigns
        method_nodes: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        for stmt in node.body:
            unit = self.placed.get(stmt.name) if isinstance(stmt, ast.FunctionDef) and method_units is not None else None
            if unit is not None and unit.function is not None and method_units is not None:
                self._add_method(cls, unit.function)
                method_units.append(unit)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                decorators = _decorator_names(stmt)
                walk = (
                    stmt.name in self.walk_names
                    or "property" in decorators
                    or "cached_property" in decorators
                )
                fn, assigns = _summarize_function(
                    stmt, is_method=True, walk=walk, capture=self.capture, lines=self._source_lines if self._text is not None else None
                )
                if stmt.name == "__init__":
                    for imp in _import_statements(stmt.body):
                        self._record_import(imp, cls.local_imports)
                    cls.init_param_defaults.update(_param_defaults(stmt.args))
                self._add_method(cls, fn)
                if method_units is not None and not assigns and stmt.name != "__init__" and self._text is not None:
                    method_units.append(self._unit(stmt, function=fn))
                for attr, lineno, value, branch in assigns:
                    self._record_instance_attr(cls, attr, lineno, stmt.name, value, branch)
                if assigns or stmt.name == "__init__":
                    assigned_by.setdefault(stmt.name, []).extend(a[0] for a in assigns)
                    method_nodes[stmt.name] = stmt
            elif isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    for name in _assigned_names(target):
                        cls.class_attrs[name] = stmt.lineno
            elif isinstance(stmt, ast.AnnAssign):
                for name in _assigned_names(stmt.target):
                    cls.class_attrs[name] = stmt.lineno
            elif isinstance(stmt, ast.ClassDef):
                self.visit_class(stmt, prefix=f"{qualname}.", made=made)
        self._mark_init_helpers(cls, assigned_by, method_nodes)
        self._add_class(qualname, cls)
        made.append((qualname, cls))

    @staticmethod
    def _add_method(cls: ClassSummary, fn: FunctionSummary) -> None:
        is_accessor = any(d.endswith(".setter") or d.endswith(".getter") or d.endswith(".deleter") for d in fn.decorators)
        if fn.name in cls.methods and not is_accessor and not _is_overload(fn.decorators):
            previous = cls.methods[fn.name]
            if not _is_overload(previous.decorators) and not previous.is_property:
                cls.duplicate_methods.append((fn.name, fn.lineno, previous.lineno))
        if not is_accessor:
            cls.methods[fn.name] = fn

    def _mark_init_helpers(
        self,
        cls: ClassSummary,
        assigned_by: dict[str, list[str]],
        method_nodes: dict[str, ast.FunctionDef | ast.AsyncFunctionDef],
    ) -> None:
        """What a method ``__init__`` calls (``self._reset_capture()``, and what that calls)
        assigns is assigned in ``__init__`` too: the attribute exists once the object is built."""
        helpers = [m for m in assigned_by if m != "__init__" and assigned_by[m]]
        if "__init__" not in method_nodes or not helpers:
            return
        pending, reached = ["__init__"], {"__init__"}
        while pending:
            caller = method_nodes[pending.pop()]
            text = self._function_text(caller)
            for helper in helpers:
                if helper not in reached and (text is None or f".{helper}(" in text) and _calls_self_method(caller, helper):
                    reached.add(helper)
                    pending.append(helper)
                    for attr in assigned_by[helper]:
                        cls.instance_attrs[attr].in_init = True

    def _function_text(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
        """The function's source, a cheap first test; None without the text (the walk decides)."""
        if self._text is None:
            return None
        return "".join(self._source_lines()[node.lineno - 1 : node.end_lineno or node.lineno])

    def _record_instance_attr(self, cls: ClassSummary, attr: str, lineno: int, method: str, value: ast.AST | None, branch: Branch) -> None:
        entry = cls.instance_attrs.get(attr)
        if entry is None:
            entry = InstanceAttr(name=attr, lineno=lineno, method=method)
            cls.instance_attrs[attr] = entry
        if method == "__init__":
            entry.in_init = True
        if value is not None and method == "__init__":
            entry.constructions.extend(_construction(value, lineno, branch))


def _class_table(value: ast.Dict, known: dict[str, list[tuple[str, str]]]) -> list[tuple[str, str]]:
    """The entries of a dict literal whose values are all names (``**OTHER`` merges a table of
    the module read before it); [] when any value is something else."""
    entries: list[tuple[str, str]] = []
    for key, item in zip(value.keys, value.values, strict=False):
        if key is None:
            merged = known.get(item.id) if isinstance(item, ast.Name) else None
            if merged is None:
                return []
            entries.extend(merged)
            continue
        name = dotted_name(item)  # names and attributes only: no call or subscript on the way
        if name is None:
            return []
        entries.append((_literal_text(key) or "?", name))
    return entries


def _calls_self_method(node: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """``self.<name>(...)`` in ``node``'s own body (nested scopes have their own ``self``)."""
    first = [*node.args.posonlyargs, *node.args.args]
    self_name = first[0].arg if first else "self"
    pending: list[ast.AST] = list(node.body)
    while pending:
        current = pending.pop()
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if (
            isinstance(current, ast.Call)
            and isinstance(current.func, ast.Attribute)
            and current.func.attr == name
            and isinstance(current.func.value, ast.Name)
            and current.func.value.id == self_name
        ):
            return True
        pending.extend(ast.iter_child_nodes(current))
    return False


def _is_overload(decorators: list[str]) -> bool:
    return any(d.endswith("overload") for d in decorators)


def _assigned_names(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        out = []
        for elt in target.elts:
            out.extend(_assigned_names(elt))
        return out
    return []


def summarize(
    tree: ast.Module,
    module: str,
    path: str,
    is_package: bool,
    walk_names: frozenset[str] = frozenset(),
    line_count: int = 0,
    capture: CaptureSpec | None = None,
    text: str | None = None,
    placed: Placed | None = None,
    lines: list[str] | None = None,
) -> ModuleSummary:
    """Reduce a parsed module to a :class:`ModuleSummary`.

    ``walk_names`` are method names whose bodies are walked in full (interface members,
    ``forward`` when a rule pack asks for data-flow facts); every other method contributes only
    its signature and its statement-level ``self.x = ...`` assignments. ``placed``: the units
    ``source.reuse`` took from an earlier version of the file, by their stand-ins' names;
    ``lines``: the text's (``source_lines``), where the caller has them.
    """
    builder = _ModuleBuilder(module, path, is_package, walk_names, capture, text, placed, lines)
    builder.visit_module(tree.body)
    builder.summary.line_count = line_count
    return builder.summary
