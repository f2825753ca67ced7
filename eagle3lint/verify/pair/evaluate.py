"""Running the small part of Python a setter, a layer-id default, a draft model's ``__init__`` or
an argument check is written in, on concrete values, without importing or executing the engine.

A setter's arithmetic (``[val + 1 for val in layer_ids]``), its branches (``if layer_ids[0] ==
1:``), a default (``[2, num_layers // 2, num_layers - 3]``) and a launch check (``if topk > 1 and
...: raise ValueError(...)``) are evaluated statement by statement: names, integer arithmetic,
comparisons, lists and comprehensions, ``len``/``max``/``list``, a config's attributes and a
dict's ``.get``. Objects of the engine (``self``, what its calls return) are values a subclass
defines, through the hooks below. Whatever cannot be known raises :class:`Unresolved` naming the
line, so that a caller says ``unknown`` instead of guessing; a *lenient* evaluator instead carries
on past it (an unknown value becomes :data:`OPAQUE`, an unknown branch runs both ways and marks
what it reaches as uncertain). Evaluation is bounded: loops, lists and integers cannot grow
without end.
"""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Iterable, Mapping
from typing import Any

from eagle3lint.source.ast_strings import message_text
from eagle3lint.verify.pair.eval_values import (
    _BUILTINS,
    _MAX_ITEMS,
    _TYPES,
    OPAQUE,
    Budget,
    ConfigView,
    Exhausted,
    Unresolved,
    _bounded,
    _Break,
    _Continue,
    _is_number,
    _kind,
    _plain,
    _refused_operands,
    _Return,
    _TooLong,
    end_body,
)

# The values and exceptions callers take from here.
__all__ = ["OPAQUE", "Budget", "ConfigView", "Evaluator", "Exhausted", "Unresolved", "end_body"]


class Evaluator:
    """Runs function bodies on concrete values; subclasses say what the engine's objects are."""

    def __init__(self, env: Mapping[str, Any] | None = None, lenient: bool = False, budget: Budget | None = None) -> None:
        self.env: dict[str, Any] = dict(env or {})
        self.lenient = lenient
        self.source = ""  # the file the body comes from, where a subclass knows it
        self.uncertain = 0  # > 0 inside a branch a lenient evaluator could not decide
        self.budget = budget or Budget()

    # ---- hooks ----------------------------------------------------------------------------
    def name(self, name: str, node: ast.AST) -> Any:
        """A name the body did not bind (``self``, a module constant)."""
        raise Unresolved(f"what `{name}` holds", getattr(node, "lineno", 0))

    def attribute_of(self, base: Any, name: str, node: ast.AST) -> Any:
        raise Unresolved(f"`{_text(node)}`", getattr(node, "lineno", 0))

    def set_attribute(self, base: Any, name: str, value: Any, node: ast.AST) -> None:
        """``base.name = value`` (``setattr`` too)."""

    def has_attribute(self, base: Any, name: str, node: ast.AST) -> bool:
        raise Unresolved(f"whether `{_text(node)}` has `{name}`", getattr(node, "lineno", 0))

    def subscript_of(self, base: Any, key: Any, node: ast.AST) -> Any:
        raise Unresolved(f"`{_text(node)}`", getattr(node, "lineno", 0))

    def iterate(self, value: Any, node: ast.AST) -> list[Any]:
        if isinstance(value, (list, tuple, range, set)):
            return self._built(list(value), node)
        raise Unresolved(f"the values of `{_text(node)}`", getattr(node, "lineno", 0))

    def length(self, value: Any, node: ast.AST) -> int:
        if isinstance(value, (list, tuple, set, dict, str, range)):
            return len(value)
        raise Unresolved(f"`len({_text(node)})`", getattr(node, "lineno", 0))

    def call_method(self, base: Any, name: str, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
        raise Unresolved(f"`{_text(node.func)}(...)` is not followed", node.lineno)

    def call_function(self, name: str, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
        raise Unresolved(f"`{name}(...)` is not followed", node.lineno)

    def call_super(self, name: str, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
        raise Unresolved(f"`super().{name}(...)` is not followed", node.lineno)

    def skip_statement(self, stmt: ast.Expr, problem: Unresolved) -> bool:
        """Whether a call whose value is dropped may be passed over when it cannot be followed."""
        return False

    def decided(self, node: ast.If, taken: bool) -> None:
        """An ``if`` whose test was evaluated (a setter's branch: evidence for a message)."""

    def reached_raise(self, node: ast.Raise) -> None:
        raise _Return(None)

    def failed_operation(self, error: str, node: ast.AST) -> None:
        """An operation on values the evaluation knows that Python refuses (``4096 // 0``, ``4096
        // "x"``): here only what stops the evaluation; a subclass that runs a constructor on a
        config reports it as the crash it is."""
        raise Unresolved(error, getattr(node, "lineno", 0))

    def failed_assert(self, node: ast.Assert) -> None:
        raise _Return(None)

    # ---- statements -----------------------------------------------------------------------
    def run(self, body: list[ast.stmt]) -> Any:
        """Run ``body``; the value of its ``return`` (None without one)."""
        try:
            self._block(body)
        except _Return as done:
            return done.value
        except Unresolved as problem:
            # Its line is in this body's file (a body run inside this one placed its own first).
            raise problem.at(self.source) from None
        return None

    def _tick(self, node: ast.AST) -> None:
        self.budget.tick(getattr(node, "lineno", 0))

    def _built(self, value: Any, node: ast.AST) -> Any:
        return self.budget.charge(value, getattr(node, "lineno", 0))

    def _block(self, body: Iterable[ast.stmt]) -> None:
        for stmt in body:
            self._stmt(stmt)

    def _stmt(self, stmt: ast.stmt) -> None:
        self._tick(stmt)
        if isinstance(stmt, ast.If):
            self._if(stmt)
            return
        if isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign)):
            try:
                self._simple(stmt)
            except Unresolved as problem:
                if isinstance(problem, Exhausted):
                    raise
                if isinstance(stmt, ast.Expr) and self.skip_statement(stmt, problem):
                    return
                if not self.lenient:
                    raise
                for target in _targets(stmt):
                    if isinstance(target, ast.Name):
                        self.env[target.id] = OPAQUE
            return
        if isinstance(stmt, ast.For):
            self._for(stmt)
        elif isinstance(stmt, ast.Return):
            value = None
            if stmt.value is not None:
                try:
                    value = self.value(stmt.value)
                except Unresolved as problem:
                    if not self.lenient or isinstance(problem, Exhausted):
                        raise
                    value = OPAQUE
            raise _Return(value)
        elif isinstance(stmt, ast.Raise):
            self.reached_raise(stmt)
        elif isinstance(stmt, ast.Assert):
            try:
                ok = self.truth(stmt.test)
            except Exhausted:
                raise
            except Unresolved:
                return  # an assert that cannot be evaluated only ever raises
            if not ok:
                self.failed_assert(stmt)
        elif isinstance(stmt, ast.With):
            self._block(stmt.body)
        elif isinstance(stmt, ast.Try):
            self._block(stmt.body)
            self._block(stmt.orelse)
            self._block(stmt.finalbody)
        elif isinstance(stmt, ast.Break):
            raise _Break
        elif isinstance(stmt, ast.Continue):
            raise _Continue
        elif isinstance(stmt, (ast.Pass, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Delete)):
            return
        elif not self.lenient:
            raise Unresolved(f"a `{type(stmt).__name__.lower()}` statement is not followed", stmt.lineno)

    def _simple(self, stmt: ast.Expr | ast.Assign | ast.AnnAssign | ast.AugAssign) -> None:
        if isinstance(stmt, ast.Expr):
            if isinstance(stmt.value, ast.Call):
                self.value(stmt.value)
            return
        if isinstance(stmt, ast.AugAssign):
            current = self.value(stmt.target)
            self._assign(stmt.target, self._built(self._binop(stmt.op, current, self.value(stmt.value), stmt), stmt))
            return
        if stmt.value is None:
            return
        value = self.value(stmt.value)
        for target in _targets(stmt):
            self._assign(target, value)

    def _if(self, stmt: ast.If) -> None:
        try:
            taken = self.truth(stmt.test)
        except Unresolved as problem:
            if not self.lenient or isinstance(problem, Exhausted):
                raise
            self.uncertain += 1
            try:
                for branch in (stmt.body, stmt.orelse):
                    saved = dict(self.env)
                    with contextlib.suppress(_Return, _Break, _Continue):
                        self._block(branch)
                    self.env = {k: v if saved.get(k, OPAQUE) is v else OPAQUE for k, v in self.env.items()} | {
                        k: OPAQUE for k in saved if k not in self.env
                    }
            finally:
                self.uncertain -= 1
            return
        self.decided(stmt, taken)
        self._block(stmt.body if taken else stmt.orelse)

    def _for(self, stmt: ast.For) -> None:
        try:
            items = self.iterate(self.value(stmt.iter), stmt.iter)
        except Unresolved as problem:
            if not self.lenient or isinstance(problem, Exhausted):
                raise
            return
        try:
            for item in items:
                self._tick(stmt)
                self._assign(stmt.target, item)
                try:
                    self._block(stmt.body)
                except _Continue:
                    continue
        except _Break:
            return
        self._block(stmt.orelse)

    def _assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = _bounded(value, target.lineno)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (list, tuple)) and len(value) == len(target.elts):
                for element, item in zip(target.elts, value, strict=True):
                    self._assign(element, item)
            else:  # unpacking an engine object (``hidden_states, residual = layer(...)``)
                for element in target.elts:
                    self._assign(element, OPAQUE)
        elif isinstance(target, ast.Attribute):
            self.set_attribute(self.value(target.value), target.attr, value, target)
        # Subscript and starred targets hold nothing a caller reads.

    # ---- expressions ----------------------------------------------------------------------
    def truth(self, node: ast.expr) -> bool:
        value = self.value(node)
        if value is OPAQUE:
            raise Unresolved(f"the truth of `{_text(node)}`", node.lineno)
        return bool(value)

    def value(self, node: ast.expr) -> Any:
        self._tick(node)
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in self.env:
                return self.env[node.id]
            if node.id in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[node.id]
            return self.name(node.id, node)
        if isinstance(node, ast.Attribute):
            base = self.value(node.value)
            if isinstance(base, ConfigView):
                try:
                    return base.get(node.attr)
                except AttributeError:
                    base.missing.setdefault(node.attr, (self.source, line, self.uncertain == 0))
                    raise Unresolved(f"the config has no `{node.attr}` (an AttributeError, or its class default)", line) from None
            if base is OPAQUE:
                raise Unresolved(f"`{_text(node)}`", line)
            return self.attribute_of(base, node.attr, node)
        if isinstance(node, ast.BinOp):
            return self._built(_bounded(self._binop(node.op, self.value(node.left), self.value(node.right), node), line), node)
        if isinstance(node, ast.UnaryOp):
            operand = self.value(node.operand)
            if operand is OPAQUE:
                raise Unresolved(f"`{_text(node)}`", line)
            if isinstance(node.op, ast.Not):
                return not operand
            if isinstance(node.op, ast.USub) and _is_number(operand):
                return -operand
            if isinstance(node.op, ast.UAdd) and _is_number(operand):
                return operand
            raise Unresolved(f"`{_text(node)}`", line)
        if isinstance(node, ast.BoolOp):
            result: Any = None
            for operand_node in node.values:
                result = self.value(operand_node)
                if result is OPAQUE:
                    raise Unresolved(f"the truth of `{_text(operand_node)}`", line)
                if isinstance(node.op, ast.And) and not result:
                    return result
                if isinstance(node.op, ast.Or) and result:
                    return result
            return result
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.IfExp):
            return self.value(node.body) if self.truth(node.test) else self.value(node.orelse)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            if any(isinstance(e, ast.Starred) for e in node.elts):
                raise Unresolved(f"`{_text(node)}`", line)
            items = [self.value(e) for e in node.elts]
            return self._built(_bounded(tuple(items) if isinstance(node, ast.Tuple) else set(items) if isinstance(node, ast.Set) else items, line), node)
        if isinstance(node, ast.Dict):
            return {self.value(k) if k is not None else None: self.value(v) for k, v in zip(node.keys, node.values, strict=True)}
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            return self._comprehension(node)
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.JoinedStr):
            return message_text(node)
        raise Unresolved(f"`{_text(node)}` is not evaluated", line)

    def _binop(self, op: ast.operator, left: Any, right: Any, node: ast.AST) -> Any:
        line = getattr(node, "lineno", 0)
        if _is_number(left) and _is_number(right):
            if isinstance(op, (ast.FloorDiv, ast.Mod, ast.Div)) and right == 0:
                self.failed_operation(f"ZeroDivisionError: `{_text(node)}` divides by zero", node)
                raise Unresolved("a division by zero", line)
            operations = {ast.Add: lambda: left + right, ast.Sub: lambda: left - right, ast.Mult: lambda: left * right,
                          ast.FloorDiv: lambda: left // right, ast.Mod: lambda: left % right, ast.Div: lambda: left / right}
            for kind, compute in operations.items():
                if isinstance(op, kind):
                    return compute()
        if isinstance(op, ast.Add) and isinstance(left, list) and isinstance(right, list):
            return left + right
        if isinstance(op, ast.Add) and isinstance(left, tuple) and isinstance(right, tuple):
            return left + right
        if isinstance(op, ast.Mult) and isinstance(left, list) and isinstance(right, int) and 0 <= right * len(left) <= _MAX_ITEMS:
            return left * right
        refused = _refused_operands(op, left, right)
        if refused:
            self.failed_operation(f"TypeError: `{_text(node)}`: {refused}", node)
        raise Unresolved(f"`{_text(node)}`", line)

    def _compare(self, node: ast.Compare) -> bool:
        left = self.value(node.left)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = self.value(comparator)
            if (left is OPAQUE or right is OPAQUE) and not (isinstance(op, (ast.Is, ast.IsNot)) and (left is None or right is None)):
                raise Unresolved(f"`{_text(node)}`", node.lineno)
            if isinstance(op, (ast.Is, ast.IsNot)) and (left is OPAQUE or right is OPAQUE):
                ok = isinstance(op, ast.IsNot)  # an unknown object is never None
            else:
                try:
                    ok = _compare(op, left, right, node)
                except Unresolved:
                    if isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) and _plain(left) and _plain(right):
                        self.failed_operation(f"TypeError: `{_text(node)}` orders {_kind(left)} against {_kind(right)}", node)
                    raise
            if not ok:
                return False
            left = right
        return True

    def _comprehension(self, node: ast.ListComp | ast.GeneratorExp | ast.SetComp) -> Any:
        if len(node.generators) != 1 or node.generators[0].is_async:
            raise Unresolved(f"`{_text(node)}`", node.lineno)
        generator = node.generators[0]
        items = self.iterate(self.value(generator.iter), generator.iter)
        saved = dict(self.env)
        out = []
        try:
            for item in items:
                self._tick(node)
                self._assign(generator.target, item)
                if all(self.truth(test) for test in generator.ifs):
                    out.append(self._built(self.value(node.elt), node))
                    self._built((None,), node)  # the slot it takes in the list
        finally:
            self.env = saved
        return set(out) if isinstance(node, ast.SetComp) else out

    def _subscript(self, node: ast.Subscript) -> Any:
        base = self.value(node.value)
        if isinstance(node.slice, ast.Slice):
            bounds = [self.value(b) if b is not None else None for b in (node.slice.lower, node.slice.upper, node.slice.step)]
            if not isinstance(base, (list, tuple)) or not all(b is None or (isinstance(b, int) and not isinstance(b, bool)) for b in bounds) or bounds[2] == 0:
                raise Unresolved(f"`{_text(node)}`", node.lineno)
            return base[slice(*bounds)]
        key = self.value(node.slice)
        if isinstance(base, (list, tuple)) and isinstance(key, int) and not isinstance(key, bool):
            if -len(base) <= key < len(base):
                return base[key]
            raise Unresolved(f"`{_text(node)}` is out of range (an IndexError)", node.lineno)
        if isinstance(base, dict):
            if key in base:
                return base[key]
            raise Unresolved(f"`{_text(node)}` has no {key!r} (a KeyError)", node.lineno)
        if base is OPAQUE:
            raise Unresolved(f"`{_text(node)}`", node.lineno)
        return self.subscript_of(base, key, node)

    def _arguments(self, node: ast.Call) -> tuple[list[Any], dict[str, Any]]:
        args: list[Any] = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise Unresolved(f"`{_text(node)}`", node.lineno)
            args.append(self._lenient_value(arg))
        kwargs = {k.arg: self._lenient_value(k.value) for k in node.keywords if k.arg is not None}
        return args, kwargs

    def _lenient_value(self, node: ast.expr) -> Any:
        try:
            return self.value(node)
        except Unresolved as problem:
            if not self.lenient or isinstance(problem, Exhausted):
                raise
            return OPAQUE

    def _call(self, node: ast.Call) -> Any:
        func = node.func
        line = node.lineno
        if isinstance(func, ast.Name) and func.id not in self.env:
            name = func.id
            if name in ("getattr", "hasattr", "setattr") and len(node.args) >= 2:
                return self._attr_builtin(node, name)
            if name == "isinstance" and len(node.args) == 2:
                return self._isinstance(node)
            if name == "len" and len(node.args) == 1 and not node.keywords:
                return self.length(self.value(node.args[0]), node.args[0])
            if name == "enumerate" and node.args:
                items = self.iterate(self.value(node.args[0]), node.args[0])
                start = self.value(node.args[1]) if len(node.args) > 1 else 0
                return list(enumerate(items, start))
            if name in _BUILTINS:
                args = [self.value(a) for a in node.args]
                kwargs = {k.arg: self.value(k.value) for k in node.keywords if k.arg}
                if any(a is OPAQUE for a in args) or len(kwargs) != len(node.keywords):
                    raise Unresolved(f"`{_text(node)}`", line)
                try:
                    # The cost of a builtin on long lists is charged before it is paid.
                    for arg in args:
                        self._built(arg if isinstance(arg, (list, tuple, set, dict)) else (), node)
                    return self._built(_bounded(_BUILTINS[name](*args, **kwargs), line), node)
                except (TypeError, ValueError, OverflowError) as exc:
                    if not isinstance(exc, _TooLong) and all(_plain(a) for a in (*args, *kwargs.values())):
                        # ``range(None)``, ``int("x")``: Python raises the same on these values.
                        self.failed_operation(f"{type(exc).__name__}: `{_text(node)}` ({exc})", node)
                    raise Unresolved(f"`{_text(node)}` ({exc})", line) from None
            if name == "super":
                return _SUPER
            args, kwargs = self._arguments(node)
            return self.call_function(name, args, kwargs, node)
        if isinstance(func, ast.Attribute):
            base = self.value(func.value)
            args, kwargs = self._arguments(node)
            if base is _SUPER:
                return self.call_super(func.attr, args, kwargs, node)
            if isinstance(base, dict) and func.attr == "get" and 1 <= len(args) <= 2:
                return base.get(args[0], args[1] if len(args) == 2 else None) if isinstance(args[0], str) else None
            if isinstance(base, (list, tuple)) and func.attr in ("index", "count") and len(args) == 1:
                if func.attr == "count":
                    return base.count(args[0])
                if args[0] in base:
                    return base.index(args[0])
                raise Unresolved(f"`{_text(node)}` (a ValueError)", line)
            if base is OPAQUE:
                raise Unresolved(f"`{_text(node)}`", line)
            return self.call_method(base, func.attr, args, kwargs, node)
        raise Unresolved(f"`{_text(node)}` is not followed", line)

    def _isinstance(self, node: ast.Call) -> bool:
        value = self.value(node.args[0])
        kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
        if value is OPAQUE or not all(isinstance(k, ast.Name) and k.id in _TYPES for k in kinds):
            raise Unresolved(f"`{_text(node)}`", node.lineno)
        return any(isinstance(value, _TYPES[k.id]) for k in kinds if isinstance(k, ast.Name))

    def _attr_builtin(self, node: ast.Call, name: str) -> Any:
        key = self.value(node.args[1])
        if not isinstance(key, str):
            raise Unresolved(f"`{_text(node)}`", node.lineno)
        base = self.value(node.args[0])
        if name == "setattr":
            value = self.value(node.args[2]) if len(node.args) > 2 else OPAQUE
            self.set_attribute(base, key, value, node)
            return None
        if isinstance(base, ConfigView):
            if name == "hasattr":
                return base.has(key)
            if base.has(key):
                return base.get(key)
            if len(node.args) >= 3:
                return self.value(node.args[2])
            raise Unresolved(f"the config has no `{key}` (an AttributeError)", node.lineno)
        if isinstance(base, dict):  # a dict has no attributes of its keys
            if name == "hasattr":
                return False
            if len(node.args) >= 3:
                return self.value(node.args[2])
        if base is OPAQUE:
            raise Unresolved(f"`{_text(node)}`", node.lineno)
        if name == "hasattr":
            return self.has_attribute(base, key, node)
        try:
            return self.attribute_of(base, key, node)
        except Exhausted:
            raise
        except Unresolved:
            if len(node.args) >= 3 and self.has_attribute(base, key, node) is False:
                return self.value(node.args[2])
            raise


class _SuperMarker:
    pass


_SUPER = _SuperMarker()


def _targets(stmt: ast.stmt) -> list[ast.expr]:
    if isinstance(stmt, ast.Assign):
        return list(stmt.targets)
    if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        return [stmt.target]
    return []


def _text(node: ast.AST) -> str:
    try:
        text = ast.unparse(node)
    except Exception:  # an unusual node: the message names no code
        return "..."
    return text if len(text) <= 120 else text[:117] + "..."


def _compare(op: ast.cmpop, left: Any, right: Any, node: ast.AST) -> bool:
    try:
        if isinstance(op, ast.Eq):
            return bool(left == right)
        if isinstance(op, ast.NotEq):
            return bool(left != right)
        if isinstance(op, ast.Is):
            return left is right or (left is None and right is None)
        if isinstance(op, ast.IsNot):
            return not (left is right or (left is None and right is None))
        if isinstance(op, ast.In):
            return bool(left in right)
        if isinstance(op, ast.NotIn):
            return bool(left not in right)
        if isinstance(op, ast.Lt):
            return bool(left < right)
        if isinstance(op, ast.LtE):
            return bool(left <= right)
        if isinstance(op, ast.Gt):
            return bool(left > right)
        if isinstance(op, ast.GtE):
            return bool(left >= right)
    except TypeError:
        pass
    raise Unresolved(f"`{_text(node)}`", getattr(node, "lineno", 0))
