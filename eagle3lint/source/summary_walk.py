"""The walk of one function's body for a summary: names, parameters, constructions followed
through locals, ``self.x = ...`` per branch, ``try`` parts (split out of ``summary``, whose
``_ModuleBuilder`` walks the module's statements and calls this for each function it keeps)."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from typing import Any

from eagle3lint.source.capture_facts import CaptureFacts, CaptureSpec
from eagle3lint.source.member_reads import unconditional_reads
from eagle3lint.source.summary_types import (
    Branch,
    Construction,
    FunctionSummary,
    Params,
    SelfAssign,
)


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a Name/Attribute chain; subscripts (``Generic[T]``) drop the index.

    A loop down the chain, not recursion: a chain as long as the parser accepts (a base class
    written ``a.a.a...`` a thousand deep) must not exhaust the interpreter's stack."""
    suffixes: list[str] = []  # outermost first
    while True:
        if isinstance(node, ast.Attribute):
            suffixes.append("." + node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call):
            suffixes.append("()")
            node = node.func
        elif isinstance(node, ast.Name):
            suffixes.append(node.id)
            return "".join(reversed(suffixes))
        else:
            return None


def is_stub_body(body: list[ast.stmt]) -> bool:
    """A body of ``...``, ``pass``, a docstring alone, or ``raise NotImplementedError``."""
    stmts = body
    if stmts and isinstance(stmts[0], ast.Expr) and isinstance(stmts[0].value, ast.Constant):
        if isinstance(stmts[0].value.value, str):
            stmts = stmts[1:]
    if not stmts:
        return True
    if len(stmts) != 1:
        return False
    only = stmts[0]
    if isinstance(only, ast.Pass):
        return True
    if isinstance(only, ast.Expr) and isinstance(only.value, ast.Constant) and only.value.value is Ellipsis:
        return True
    if isinstance(only, ast.Raise) and only.exc is not None:
        exc = only.exc.func if isinstance(only.exc, ast.Call) else only.exc
        return dotted(exc) == "NotImplementedError"
    return False


_STRAIGHT_LINE = frozenset({ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Pass})


def _always_raises(body: list[ast.stmt]) -> bool:
    for stmt in body:
        kind = type(stmt)
        if kind is ast.Raise:
            return True
        if kind not in _STRAIGHT_LINE:
            return False
    return False


def _params(args: ast.arguments, drop_first: bool) -> Params:
    positional = [a.arg for a in [*args.posonlyargs, *args.args]]
    if drop_first and positional:
        positional = positional[1:]
    required = len(positional) - len(args.defaults)
    kwonly = [a.arg for a in args.kwonlyargs]
    required_kw = [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=False) if d is None]
    return Params(
        positional=positional,
        required_positional=max(required, 0),
        has_varargs=args.vararg is not None,
        keyword_only=kwonly,
        required_keyword_only=required_kw,
        has_varkw=args.kwarg is not None,
    )


def _string_list(node: ast.AST) -> list[str] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.List, ast.Tuple)):
        out = []
        for elt in node.elts:
            if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                out.append(elt.value)
            else:
                return None
        return out
    return None


def _construction(value: ast.AST, lineno: int, branch: Branch = ()) -> list[Construction]:
    """Classes a right-hand side may construct: calls, conditional expressions, ``a or b``."""
    if isinstance(value, ast.IfExp):
        return _construction(value.body, lineno, branch) + _construction(value.orelse, lineno, branch)
    if isinstance(value, ast.BoolOp):
        out: list[Construction] = []
        for v in value.values:
            out.extend(_construction(v, lineno, branch))
        return out
    if isinstance(value, ast.Call):
        picked = _table_pick(value.func)
        if picked is not None:
            table, key = picked
            return [Construction(callee=table, lineno=lineno, branch=branch, table=True, table_key=key)]
        callee = dotted(value.func)
        if callee is None:
            return []
        literal: dict[str, list[str]] = {}
        for kw in value.keywords:
            if kw.arg:
                strings = _string_list(kw.value)
                if strings is not None:
                    literal[kw.arg] = strings
                elif isinstance(kw.value, ast.Call):
                    # vllm_config=vllm_config.with_hf_config(cfg, architectures=[...])
                    _record_nested_literals(kw.value, literal)
        for arg in value.args:
            if isinstance(arg, ast.Call):
                _record_nested_literals(arg, literal)
        return [Construction(callee=callee, lineno=lineno, literal_args=literal, branch=branch)]
    name = dotted(value)
    if name is not None and name.startswith("self."):
        # ``self.model = self.language_model``: an alias of another attribute.
        return [Construction(callee=name, lineno=lineno, branch=branch, call=False)]
    return []


def _table_pick(func: ast.AST) -> tuple[str, str | None] | None:
    """``TABLE[key]`` or ``TABLE.get(key[, default])`` as the called object: (TABLE, the key's
    source text when it is a literal). Whether TABLE is a table of classes the index decides
    (``Generic[T](...)`` subscripts a class, not a table)."""
    key: ast.AST | None = None
    if isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name):
        table, key = func.value.id, func.slice
    elif (
        isinstance(func, ast.Call)
        and isinstance(func.func, ast.Attribute)
        and func.func.attr == "get"
        and isinstance(func.func.value, ast.Name)
        and func.args
        and not func.keywords
    ):
        table, key = func.func.value.id, func.args[0]
    else:
        return None
    return table, _literal_text(key)


def _literal_text(node: ast.AST | None) -> str | None:
    """The source text of a literal key (a constant, or a tuple of constants); None otherwise."""
    if isinstance(node, ast.Constant) or (isinstance(node, ast.Tuple) and all(isinstance(e, ast.Constant) for e in node.elts)):
        try:
            return ast.unparse(node)
        except (ValueError, RecursionError):
            return None
    return None


# How many local names one value is followed through (``minicpmv = cls(...)``, ``cls = T.get(v)``),
# and how many values it may stand for before it is left as written (arms multiply).
_INLINE_DEPTH = 4


_INLINE_VALUES = 64


# A local binding in ``__init__``: (line, value, enclosing branches).
LocalBinding = tuple[int, ast.AST, Branch]


def _reaching(bindings: list[LocalBinding], line: int, branch: Branch) -> list[LocalBinding]:
    """The bindings of one local name that may hold when a statement on ``line`` in ``branch``
    runs: those before it, not in another arm of an ``if`` it is in, and not replaced on every
    path by a later binding at the same or an enclosing level."""
    arms = dict(branch)
    before = sorted((b for b in bindings if b[0] < line and all(arms.get(at, arm) == arm for at, arm in b[2])), key=lambda b: b[0])
    # Latest first: a binding stands unless a later one sits at its level or an enclosing one.
    # Each branch prefix gets a number, so the test costs the nesting depth, not its square.
    numbers: dict[tuple[int, tuple[int, int]], int] = {}
    later: set[int] = set()
    standing: list[LocalBinding] = []
    for binding in reversed(before):
        prefixes = [0]
        for step in binding[2]:
            prefixes.append(numbers.setdefault((prefixes[-1], step), len(numbers) + 1))
        if not any(n in later for n in prefixes):
            standing.append(binding)
        later.add(prefixes[-1])
    return standing[::-1]


def _inline_locals(value: ast.AST, line: int, branch: Branch, local_names: dict[str, list[LocalBinding]], depth: int = 0) -> list[ast.AST]:
    """``value`` with the local names it is (or calls) replaced by what they may be bound to:
    ``self.m = inst`` after ``inst = cls(config)`` and ``cls = _TABLE.get(v)`` reads as
    ``self.m = _TABLE.get(v)(config)``; one value per binding that may reach it."""
    if depth >= _INLINE_DEPTH or not local_names:
        return [value]
    if isinstance(value, ast.Name) and value.id in local_names:
        reaching = _reaching(local_names[value.id], line, branch)
        out: list[ast.AST] = []
        for bound_line, bound, bound_branch in reaching:
            # Line 0: the parameter itself, as the caller (or its default) binds it.
            out.extend([bound] if bound_line == 0 else _inline_locals(bound, bound_line, bound_branch, local_names, depth + 1))
        return out if len(out) <= _INLINE_VALUES else [value]
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in local_names:
        calls: list[ast.AST] = []
        for bound_line, bound, bound_branch in _reaching(local_names[value.func.id], line, branch):
            funcs = [bound] if bound_line == 0 else _inline_locals(bound, bound_line, bound_branch, local_names, depth + 1)
            for func in funcs:
                if isinstance(func, ast.expr):
                    calls.append(ast.Call(func=func, args=value.args, keywords=value.keywords))
        return calls if len(calls) <= _INLINE_VALUES else [value]
    return [value]


def final_constructions(constructions: list[Construction]) -> list[Construction]:
    """The constructions whose value ``self.<attr>`` can still hold when ``__init__`` returns:
    those no later assignment replaces on every path (one at the same or an enclosing level).
    Branches of an ``if`` are kept side by side (a backbone chosen by config)."""
    return [
        c
        for c in constructions
        if not any(o.lineno > c.lineno and o.branch == c.branch[: len(o.branch)] for o in constructions)
    ]


def _record_nested_literals(call: ast.Call, literal: dict[str, list[str]]) -> None:
    """String lists given to a call nested in a construction's arguments: by keyword under
    their name, positionally as ``"<function>#<index>"`` (``with_hf_config#1``)."""
    if dotted(call.func) is None:
        return
    for inner in call.keywords:
        if inner.arg:
            strings = _string_list(inner.value)
            if strings is not None:
                literal[inner.arg] = strings
    short = (dotted(call.func) or "").rsplit(".", 1)[-1]
    for position, arg in enumerate(call.args):
        if isinstance(arg, (ast.List, ast.Tuple)):
            strings = _string_list(arg)
            if strings:
                literal[f"{short}#{position}"] = strings


class _BodyWalker:
    """Collects self-chains, self reads, calls and ``self.x = ...`` assignments of one function.

    An explicit pre-order walk with handlers by node type: ``ast.NodeVisitor`` dispatches by
    building a method name per node, and this runs over every walked body of every model."""

    def __init__(self, self_name: str) -> None:
        self.self_name = self_name
        self.chains: list[tuple[str, str]] = []
        self.probed: set[tuple[str, str]] = set()
        self.reads: set[str] = set()
        self.calls: set[str] = set()
        self.assigns: list[SelfAssign] = []
        self.returns_self_attr: str | None = None
        # None until a ``return <value>``; then whether every one so far returned ``self``.
        self.returns_self: bool | None = None

    def walk(self, body: list[ast.stmt]) -> None:
        handlers = _WALK_HANDLERS
        fields = _CHILD_FIELDS
        stack: list[object] = list(reversed(body))
        while stack:
            node = stack.pop()
            kind = type(node)
            handler = handlers.get(kind)
            if handler is not None and not handler(self, node):
                continue
            names = fields.get(kind)
            if names is None:
                # Leaves (names, strings, None in ``Dict.keys``) have no fields; ``ctx`` is a marker.
                names = fields[kind] = tuple(f for f in getattr(kind, "_fields", ()) if f != "ctx")
            if not names:
                continue
            children: list[object] = []
            for name in names:
                value = getattr(node, name, None)
                if value.__class__ is list:
                    children.extend(value)
                elif value is not None:
                    children.append(value)
            children.reverse()
            stack.extend(children)

    def _self_attr(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == self.self_name:
                return node.attr
        return None

    # Each handler returns whether the walk goes on into the node's children.
    def _attribute(self, node: ast.Attribute) -> bool:
        attr = self._self_attr(node)
        if attr is not None:
            if isinstance(node.ctx, ast.Load):
                self.reads.add(attr)
            return False
        inner = node.value
        inner_attr = self._self_attr(inner)
        if inner_attr is not None:
            self.chains.append((inner_attr, node.attr))
            self.reads.add(inner_attr)
            return False
        if isinstance(inner, ast.Call):
            call_attr = self._self_attr(inner.func)
            if call_attr is not None:
                self.chains.append((call_attr + "()", node.attr))
        return True

    def _call(self, node: ast.Call) -> bool:
        func = node.func
        if isinstance(func, ast.Name):
            self.calls.add(func.id)
            if func.id == "hasattr" and len(node.args) == 2:
                target = self._self_attr(node.args[0])
                member = node.args[1]
                if target is not None and isinstance(member, ast.Constant) and isinstance(member.value, str):
                    self.probed.add((target, member.value))
            if func.id == "getattr" and len(node.args) >= 2:
                target = self._self_attr(node.args[0])
                member = node.args[1]
                if target is not None and isinstance(member, ast.Constant) and isinstance(member.value, str):
                    self.chains.append((target, member.value))
                elif target is not None:
                    self.chains.append((target, "*"))
        elif isinstance(func, ast.Attribute):
            self.calls.add(func.attr)
        return True

    def _assign(self, node: ast.Assign) -> bool:
        for target in node.targets:
            self._record_target(target, node.value, node.lineno)
        return True

    def _ann_assign(self, node: ast.AnnAssign) -> bool:
        self._record_target(node.target, node.value, node.lineno)
        return True

    def _aug_assign(self, node: ast.AugAssign) -> bool:
        self._record_target(node.target, None, node.lineno)
        return True

    def _record_target(self, target: ast.AST, value: ast.AST | None, lineno: int) -> None:
        attr = self._self_attr(target)
        if attr is not None:
            self.assigns.append((attr, lineno, value, ()))
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self._record_target(elt, None, lineno)

    def _return(self, node: ast.Return) -> bool:
        if node.value is not None and self.returns_self_attr is None:
            self.returns_self_attr = self._self_attr(node.value)
        is_self = isinstance(node.value, ast.Name) and node.value.id == self.self_name
        self.returns_self = is_self and self.returns_self is not False
        return True

    def _nested_scope(self, node: ast.AST) -> bool:
        # Nested functions and classes have their own ``self``; lambdas keep ours.
        return False


_WALK_HANDLERS: dict[type, Callable[[_BodyWalker, Any], bool]] = {
    ast.Attribute: _BodyWalker._attribute,
    ast.Call: _BodyWalker._call,
    ast.Assign: _BodyWalker._assign,
    ast.AnnAssign: _BodyWalker._ann_assign,
    ast.AugAssign: _BodyWalker._aug_assign,
    ast.Return: _BodyWalker._return,
    ast.FunctionDef: _BodyWalker._nested_scope,
    ast.AsyncFunctionDef: _BodyWalker._nested_scope,
    ast.ClassDef: _BodyWalker._nested_scope,
}


_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _decorator_names(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> list[str]:
    names = []
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = dotted(target)
        if name:
            names.append(name)
    return names


def _summarize_function(
    node: ast.FunctionDef | ast.AsyncFunctionDef,
    is_method: bool,
    walk: bool,
    capture: CaptureSpec | None = None,
    lines: Callable[[], list[str]] | None = None,
) -> tuple[FunctionSummary, list[SelfAssign]]:
    decorators = _decorator_names(node)
    drop_first = is_method and "staticmethod" not in decorators
    params = _params(node.args, drop_first)
    summary = FunctionSummary(
        name=node.name,
        lineno=node.lineno,
        col=node.col_offset,
        end_lineno=node.end_lineno or node.lineno,
        params=params,
        is_stub=is_stub_body(node.body),
        always_raises=_always_raises(node.body),
        decorators=decorators,
    )
    assigns: list[SelfAssign] = []
    if is_method and node.name == "__init__":
        all_args = [*node.args.posonlyargs, *node.args.args]
        _collect_with_assigns(node.body, all_args[0].arg if all_args else "self", summary.with_assigns, None)
        summary.super_skips = _super_skip(node)
        summary.super_init_args = _super_init_args(node)
    if is_method and capture is not None and node.name in capture.functions:
        all_args = [*node.args.posonlyargs, *node.args.args]
        text = lines()[node.lineno - 1 : summary.end_lineno] if lines is not None else None
        # Most forwards (attention, MLP, norms) name nothing the facts are made of: skipping
        # their walk keeps a cold check within the budget of a plain parse.
        if text is None or capture.may_matter("".join(text)):
            summary.capture = capture.facts(node, all_args[0].arg if (drop_first and all_args) else "self")
        else:
            summary.capture = CaptureFacts()
    if not walk and is_method:
        all_args = [*node.args.posonlyargs, *node.args.args]
        self_name = all_args[0].arg if (drop_first and all_args) else "self"
        if node.name == "__init__":
            # A dispatcher binds its pick to locals first (``cls = _TABLE.get(v)``; ``inst = cls(...)``).
            # A parameter is bound on entry: where no rebinding reaches, it keeps its own value.
            arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            local_names: dict[str, list[LocalBinding]] = {a.arg: [(0, ast.Name(id=a.arg, ctx=ast.Load()), ())] for a in arguments}
            _collect_self_assigns(node.body, self_name, assigns, local_names=local_names)
            assigns = _through_locals(assigns, local_names)
        else:
            _collect_self_assigns(node.body, self_name, assigns)
    if walk:
        all_args = [*node.args.posonlyargs, *node.args.args]
        self_name = all_args[0].arg if (drop_first and all_args) else "self"
        walker = _BodyWalker(self_name)
        walker.walk(node.body)
        summary.self_chains = walker.chains
        summary.self_reads = walker.reads
        summary.calls = walker.calls
        summary.probed_chains = walker.probed
        summary.sure_reads = [(read.chain, read.line, read.column) for read in unconditional_reads(node)]
        summary.returns_self_attr = walker.returns_self_attr
        summary.returns_self = walker.returns_self is True
        summary.walked = True
        assigns = walker.assigns
    return summary, assigns


def _super_init_calls(node: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.Call]:
    """``super(...).__init__(...)`` calls that are statements of the body, in order."""
    for stmt in node.body:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "__init__"
            and isinstance(call.func.value, ast.Call)
            and dotted(call.func.value.func) == "super"
        ):
            yield call


def _super_init_args(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[tuple[str | None, ...], dict[str, str]] | None:
    for call in _super_init_calls(node):
        if any(isinstance(a, ast.Starred) for a in call.args):
            return (), {}  # it runs, with arguments that cannot be followed
        positional = tuple(dotted(a) if isinstance(a, (ast.Name, ast.Attribute)) else None for a in call.args)
        keywords = {k.arg: name for k in call.keywords if k.arg and (name := dotted(k.value)) is not None}
        return positional, keywords
    return None


def _super_skip(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """``super(X, self).__init__(...)`` as a statement of the body: X (its ``__init__`` is skipped)."""
    for call in _super_init_calls(node):
        if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Call) and call.func.value.args:
            return dotted(call.func.value.args[0])
    return None


_TRY_TYPES: tuple[type, ...] = tuple(t for t in (ast.Try, getattr(ast, "TryStar", None)) if t is not None)


_TRY_KINDS = frozenset(_TRY_TYPES)


def try_parts(stmt: ast.stmt) -> tuple[list[ast.stmt], list[ast.ExceptHandler], list[ast.stmt], list[ast.stmt]] | None:
    """(body, handlers, orelse, finalbody) of a ``try``/``try*`` statement, else None."""
    if not isinstance(stmt, _TRY_TYPES):
        return None
    return (getattr(stmt, "body", []), getattr(stmt, "handlers", []), getattr(stmt, "orelse", []), getattr(stmt, "finalbody", []))


def _param_defaults(args: ast.arguments) -> dict[str, str]:
    """Parameters whose default is a name (``cls=SomeModel``), by parameter name."""
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
    out: dict[str, str] = {}
    for arg, default in pairs:
        if isinstance(default, (ast.Name, ast.Attribute)):
            name = dotted(default)
            if name and name != "None":
                out[arg.arg] = name
    return out


def _import_statements(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """Import statements of a function body, through if/try blocks (not nested functions)."""
    found: list[ast.Import | ast.ImportFrom] = []
    for stmt in body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            found.append(stmt)
        elif isinstance(stmt, (ast.If, ast.With, ast.AsyncWith)):
            found.extend(_import_statements(stmt.body))
            found.extend(_import_statements(getattr(stmt, "orelse", [])))
        elif (parts := try_parts(stmt)) is not None:
            body_, handlers, orelse, final = parts
            for block in (body_, *(h.body for h in handlers), orelse, final):
                found.extend(_import_statements(block))
    return found


_NESTED_BLOCKS = frozenset({ast.If, ast.For, ast.AsyncFor, ast.While})


_WITH_BLOCKS = frozenset({ast.With, ast.AsyncWith})


def _collect_self_assigns(
    body: list[ast.stmt], self_name: str, out: list[SelfAssign], branch: Branch = (), local_names: dict[str, list[LocalBinding]] | None = None
) -> None:
    """``self.x = ...`` at statement level (through if/for/with/try blocks), without descending
    into expressions: cheap enough to run on every method of every model (hence exact-type
    tests, not isinstance chains). Each assignment carries the branches it sits in.
    ``local_names`` (``__init__`` only) collects the plain local bindings too (``cls = ...``)."""
    for stmt in body:
        kind = type(stmt)
        if kind is ast.Assign:
            for target in stmt.targets:  # type: ignore[attr-defined]
                _self_target(target, stmt.value, stmt.lineno, self_name, out, branch)  # type: ignore[attr-defined]
                if local_names is not None and type(target) is ast.Name:
                    local_names.setdefault(target.id, []).append((stmt.lineno, stmt.value, branch))  # type: ignore[attr-defined]
        elif kind is ast.AnnAssign:
            _self_target(stmt.target, stmt.value, stmt.lineno, self_name, out, branch)  # type: ignore[attr-defined]
            if local_names is not None and type(stmt.target) is ast.Name and stmt.value is not None:  # type: ignore[attr-defined]
                local_names.setdefault(stmt.target.id, []).append((stmt.lineno, stmt.value, branch))  # type: ignore[attr-defined]
        elif kind in _WITH_BLOCKS:
            _collect_self_assigns(stmt.body, self_name, out, branch, local_names)  # type: ignore[attr-defined]
        elif kind in _NESTED_BLOCKS:
            line = stmt.lineno
            _collect_self_assigns(stmt.body, self_name, out, (*branch, (line, 0)), local_names)  # type: ignore[attr-defined]
            _collect_self_assigns(getattr(stmt, "orelse", []), self_name, out, (*branch, (line, 1)), local_names)
        elif kind in _TRY_KINDS:
            line = stmt.lineno
            # The body and its else run together; each handler instead of them; finally always.
            _collect_self_assigns(stmt.body, self_name, out, (*branch, (line, 0)), local_names)  # type: ignore[attr-defined]
            for n, handler in enumerate(stmt.handlers, start=1):  # type: ignore[attr-defined]
                _collect_self_assigns(handler.body, self_name, out, (*branch, (line, n)), local_names)
            _collect_self_assigns(stmt.orelse, self_name, out, (*branch, (line, 0)), local_names)  # type: ignore[attr-defined]
            _collect_self_assigns(stmt.finalbody, self_name, out, branch, local_names)  # type: ignore[attr-defined]


def _through_locals(assigns: list[SelfAssign], local_names: dict[str, list[LocalBinding]]) -> list[SelfAssign]:
    """Each ``self.x = <local>`` (or ``<local>(...)``) once per value the local may hold."""
    out: list[SelfAssign] = []
    for attr, line, value, branch in assigns:
        values: list[ast.AST | None] = [*_inline_locals(value, line, branch, local_names)] if value is not None else []
        out.extend((attr, line, v, branch) for v in values or [value])
    return out


def _collect_with_assigns(body: list[ast.stmt], self_name: str, out: dict[str, list[str]], inside: list[str] | None) -> None:
    """Statement level, like ``_collect_self_assigns``; ``inside``: the list the enclosing
    ``with self.<cm>(...)`` block collects into."""
    for stmt in body:
        if inside is not None and isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == self_name:
                    if target.attr not in inside:
                        inside.append(target.attr)
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            collecting = inside
            for item in stmt.items:
                call = item.context_expr
                if (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute)
                    and isinstance(call.func.value, ast.Name)
                    and call.func.value.id == self_name
                ):
                    collecting = out.setdefault(call.func.attr, [])
            _collect_with_assigns(stmt.body, self_name, out, collecting)
        elif isinstance(stmt, (ast.If, ast.For, ast.AsyncFor, ast.While)):
            _collect_with_assigns(stmt.body, self_name, out, inside)
            _collect_with_assigns(stmt.orelse, self_name, out, inside)
        elif (parts := try_parts(stmt)) is not None:
            body_, handlers, orelse, final = parts
            for block in (body_, *(h.body for h in handlers), orelse, final):
                _collect_with_assigns(block, self_name, out, inside)


def _self_target(target: ast.AST, value: ast.AST | None, lineno: int, self_name: str, out: list[SelfAssign], branch: Branch = ()) -> None:
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == self_name:
        out.append((target.attr, lineno, value, branch))
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            _self_target(elt, None, lineno, self_name, out, branch)
