"""The EAGLE-3 contract as the engine's own source states it.

Every access of an interface member on a model object outside the models folder becomes a
:class:`ContractSite` with its role (target or draft) and its guard:

* ``none``     — a bare access: a missing member is an ``AttributeError`` at start-up;
* ``error``    — probed first, with a clear error (``if not hasattr: raise``, or a try/except
  that re-raises): still fatal, but readable;
* ``fallback`` — probed with an alternative path (``if hasattr``, ``getattr(x, m, default)``,
  a swallowed ``AttributeError``): the member is optional.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from eagle3lint.common.findings import FileError
from eagle3lint.common.lines import count_line_ends, source_lines
from eagle3lint.model.launch_checks import LaunchRefusal, read_launch_refusals
from eagle3lint.source.engine import Engine
from eagle3lint.source.rulepack import MemberSpec
from eagle3lint.source.sources import decode_source, parse_text, read_source
from eagle3lint.source.summary_walk import try_parts

FATAL_GUARDS = ("none", "error")


@dataclass(frozen=True)
class ContractSite:
    member: str
    path: str  # relative to the engine's source root: <package>/...
    line: int
    column: int
    function: str
    receiver: str
    access: str  # "call" | "load" | "probe"
    role: str  # "target" | "draft"
    guard: str  # "none" | "error" | "fallback"
    positional_args: int = 0
    keyword_args: tuple[str, ...] = ()
    branch: str | None = None  # "eagle3" | "not-eagle3" | None

    @property
    def fatal(self) -> bool:
        return self.access != "probe" and self.guard in FATAL_GUARDS

    def describe_guard(self) -> str:
        return {
            "none": "unguarded: a bare AttributeError at start-up",
            "error": "guarded: the engine refuses EAGLE-3 with its own message when it is missing",
            "fallback": "guarded with a fallback: optional",
        }[self.guard] if self.access != "probe" else "probe (hasattr)"

    def to_json(self) -> dict[str, Any]:
        return {
            "member": self.member,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "function": self.function,
            "receiver": self.receiver,
            "access": self.access,
            "role": self.role,
            "guard": self.guard,
            "positional_args": self.positional_args,
            "keyword_args": list(self.keyword_args),
            "branch": self.branch,
        }


@dataclass
class MemberContract:
    name: str
    kind: str
    known: bool  # listed in the rule pack
    summary: str = ""
    sites: list[ContractSite] = field(default_factory=list)

    def fatal_sites(self, role: str, branch_filter: str | None = None) -> list[ContractSite]:
        """Sites that make the member required for ``role``.

        ``branch_filter`` "eagle3" drops sites only reached by non-EAGLE-3 algorithms, and
        "not-eagle3" drops EAGLE-3-only sites (for MTP/NextN draft heads).
        """
        out = []
        for site in self.sites:
            if site.role != role or not site.fatal:
                continue
            if branch_filter == "eagle3" and site.branch == "not-eagle3":
                continue
            if branch_filter == "not-eagle3" and site.branch == "eagle3":
                continue
            out.append(site)
        return out

    def strongest_guard(self, role: str) -> str | None:
        guards = {s.guard for s in self.sites if s.role == role and s.access != "probe"}
        for guard in ("none", "error", "fallback"):
            if guard in guards:
                return guard
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "known": self.known,
            "summary": self.summary,
            "required_for": sorted({s.role for s in self.sites if s.fatal}),
            "guard": {role: self.strongest_guard(role) for role in ("target", "draft") if self.strongest_guard(role)},
            "sites": [s.to_json() for s in self.sites],
        }


@dataclass
class Contract:
    engine: Engine
    members: dict[str, MemberContract]
    scanned_files: int = 0
    errors: list[FileError] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # engine-specific facts, by engine name
    # The engine's launch checks that refuse EAGLE-3 under a launch option (``launch_checks``).
    launch_refusals: list[LaunchRefusal] = field(default_factory=list)

    def required(self, role: str) -> list[MemberContract]:
        return [m for m in self.members.values() if m.known and m.fatal_sites(role)]

    def unknown_members(self) -> list[MemberContract]:
        return [m for m in self.members.values() if not m.known]

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine.to_json(),
            "members": [m.to_json() for m in self.members.values()],
            "scanned_files": self.scanned_files,
            "errors": [e.to_json() for e in self.errors],
            "launch_refusals": [r.to_json() for r in self.launch_refusals],
            **{key: value.to_json() if hasattr(value, "to_json") else value for key, value in self.extra.items()},
        }


def _normalize_receiver(text: str) -> str:
    return re.sub(r"\[[^\]]*\]", "", text)


def _hasattr_member(node: ast.AST) -> str | None:
    """``hasattr(x, "m")`` -> "m"."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "hasattr"
        and len(node.args) == 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        return node.args[1].value
    return None


# Engine check functions that vouch for several members at once: vLLM's
# ``supports_eagle3(model)`` is true only when the model has every protocol member.
CheckFunctions = dict[str, frozenset[str]]


def _check_call(node: ast.AST, checks: CheckFunctions) -> str | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in checks and node.args:
        return node.func.id
    return None


def _positive_hasattrs(test: ast.AST, checks: CheckFunctions | None = None) -> set[str]:
    """Members whose ``hasattr`` (or check function) must be true for ``test`` to be true."""
    member = _hasattr_member(test)
    if member:
        return {member}
    check = _check_call(test, checks or {})
    if check:
        return set((checks or {})[check])
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        out: set[str] = set()
        for value in test.values:
            out |= _positive_hasattrs(value, checks)
        return out
    return set()


def _negative_hasattrs(test: ast.AST, checks: CheckFunctions | None = None) -> set[str]:
    """Members whose ``hasattr`` is false whenever ``test`` is true (``not hasattr(...)``)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _positive_hasattrs(test.operand, checks)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        # ``if not hasattr(a, m) or ...: raise`` still guards m after the if.
        out: set[str] = set()
        for value in test.values:
            out |= _negative_hasattrs(value, checks)
        return out
    return set()


def _contains_raise(body: list[ast.stmt]) -> bool:
    return any(isinstance(node, ast.Raise) for stmt in body for node in ast.walk(stmt))


def _raises_outright(body: list[ast.stmt]) -> bool:
    """The branch ends in ``raise`` with no alternative before it (an ``elif`` may still succeed)."""
    return bool(body) and isinstance(body[-1], ast.Raise)


def _ends_block(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Raise, ast.Return, ast.Continue, ast.Break))


def _handler_guard(handlers: list[ast.ExceptHandler]) -> str:
    """What ``except AttributeError`` makes of a missing member: "error" where a handler raises
    an exception of its own (the engine's message), "none" where it only re-raises the
    ``AttributeError`` (``raise``, ``raise exc``: still the bare crash), "fallback" otherwise."""
    reraise = False
    for handler in handlers:
        for node in (n for stmt in handler.body for n in ast.walk(stmt)):
            if not isinstance(node, ast.Raise):
                continue
            caught = isinstance(node.exc, ast.Name) and node.exc.id == handler.name
            if node.exc is None or caught:
                reraise = True
            else:
                return "error"
    return "none" if reraise else "fallback"


def _handler_catches_attribute_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    for t in types:
        name = t.id if isinstance(t, ast.Name) else t.attr if isinstance(t, ast.Attribute) else ""
        if name in ("AttributeError", "Exception", "BaseException"):
            return True
    return False


@dataclass(frozen=True)
class _Context:
    function: str = "<module>"
    # (test, polarity, other_raises): polarity True inside the body of ``if test``, False inside
    # its else; other_raises when the opposite branch raises (the probe then guards with an error).
    conditions: tuple[tuple[ast.expr, bool, bool], ...] = ()
    try_guard: str | None = None
    # Members guarded by an earlier statement of an enclosing block -> guard kind.
    established: tuple[tuple[str, str], ...] = ()
    and_guarded: frozenset[str] = frozenset()


@dataclass(frozen=True)
class CheckCall:
    """A call of an engine check function (``supports_eagle3(self.get_model())``)."""

    check: str
    path: str
    line: int
    function: str
    argument: str
    guard: str  # "error" when a false result raises, else "fallback"


class ContractExtension:
    """What an engine adds to the call-site scan (``EngineAdapter.contract_extension``). The
    default adds nothing."""

    def check_functions(self) -> dict[str, frozenset[str]]:
        """Engine functions that vouch for several members at once, by name (vLLM's
        ``supports_eagle3(model)`` holds only when the model has every protocol member)."""
        return {}

    def errors(self) -> list[FileError]:
        """Files the extension could not read (reported like the scan's own)."""
        return []

    def extra(self, check_calls: list[CheckCall]) -> dict[str, Any]:
        """Engine facts kept in ``Contract.extra`` (shown by ``contract``, read by the rules)."""
        return {}


class _SiteCollector:
    def __init__(self, engine: Engine, rel_path: str, members: dict[str, Any], checks: CheckFunctions | None = None) -> None:
        self.engine = engine
        self.pack = engine.pack
        self.rel_path = rel_path
        self.members = members
        self.checks: CheckFunctions = checks or {}
        self.sites: list[ContractSite] = []
        self.check_calls: list[CheckCall] = []
        self.indent = 0  # column offset of a chunk parsed out of its class
        # Attribute chains (``model.embed_tokens``), by their last name.
        self.chains: dict[str, list[MemberSpec]] = {}
        for spec in members.values():
            if isinstance(spec, MemberSpec) and spec.is_chain:
                self.chains.setdefault(spec.name.rsplit(".", 1)[1], []).append(spec)

    def wants(self, member: str) -> bool:
        return member in self.members or bool(self.pack.unknown_member_pattern.search(member))

    # ---- statements ---------------------------------------------------------------------
    def block(self, body: list[ast.stmt], ctx: _Context) -> None:
        established = list(ctx.established)
        for stmt in body:
            current = _Context(ctx.function, ctx.conditions, ctx.try_guard, tuple(established), ctx.and_guarded)
            self.stmt(stmt, current)
            if isinstance(stmt, ast.If) and _ends_block(stmt.body):
                for member in _negative_hasattrs(stmt.test, self.checks):
                    guard = "error" if _contains_raise(stmt.body) else "fallback"
                    established.append((member, guard))

    def stmt(self, stmt: ast.stmt, ctx: _Context) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = stmt.name if ctx.function == "<module>" else f"{ctx.function}.{stmt.name}"
            for dec in stmt.decorator_list:
                self.expr(dec, ctx)
            self.block(stmt.body, _Context(function=name))
            return
        if isinstance(stmt, ast.ClassDef):
            name = stmt.name if ctx.function == "<module>" else f"{ctx.function}.{stmt.name}"
            self.block(stmt.body, _Context(function=name))
            return
        if isinstance(stmt, ast.If):
            self.record_checks(stmt, ctx)
            self.expr(stmt.test, ctx)
            self.block(stmt.body, _with_condition(ctx, stmt.test, True, _raises_outright(stmt.orelse)))
            self.block(stmt.orelse, _with_condition(ctx, stmt.test, False, _raises_outright(stmt.body)))
            return
        if isinstance(stmt, ast.While):
            self.expr(stmt.test, ctx)
            self.block(stmt.body, _with_condition(ctx, stmt.test, True))
            self.block(stmt.orelse, ctx)
            return
        parts = try_parts(stmt)
        if parts is not None:
            body, handlers, orelse, final = parts
            catching = [h for h in handlers if _handler_catches_attribute_error(h)]
            guard = ctx.try_guard
            if catching:
                guard = _handler_guard(catching)
            inner = _Context(ctx.function, ctx.conditions, guard, ctx.established, ctx.and_guarded)
            self.block(body, inner)
            for handler in handlers:
                self.block(handler.body, ctx)
            self.block(orelse, ctx)
            self.block(final, ctx)
            return
        for field_name, value in ast.iter_fields(stmt):
            if isinstance(value, list):
                stmts = [v for v in value if isinstance(v, ast.stmt)]
                if stmts:
                    self.block(stmts, ctx)
                for v in value:
                    if isinstance(v, ast.expr):
                        self.expr(v, ctx)
                    elif isinstance(v, ast.withitem):
                        self.expr(v.context_expr, ctx)
                    elif isinstance(v, ast.match_case) if hasattr(ast, "match_case") else False:
                        self.block(v.body, ctx)
            elif isinstance(value, ast.expr):
                self.expr(value, ctx)
            del field_name

    # ---- expressions --------------------------------------------------------------------
    def expr(self, node: ast.expr, ctx: _Context) -> None:
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            guarded = set(ctx.and_guarded)
            for value in node.values:
                self.expr(value, _Context(ctx.function, ctx.conditions, ctx.try_guard, ctx.established, frozenset(guarded)))
                guarded |= _positive_hasattrs(value, self.checks)
            return
        if isinstance(node, ast.IfExp):
            self.expr(node.test, ctx)
            self.expr(node.body, _with_condition(ctx, node.test, True))
            self.expr(node.orelse, _with_condition(ctx, node.test, False))
            return
        if isinstance(node, ast.Call):
            self.call(node, ctx)
            return
        if isinstance(node, ast.Attribute):
            if isinstance(node.ctx, ast.Load) and self.wants(node.attr):
                self.site(node.attr, node.value, node, "load", ctx)
            if isinstance(node.ctx, ast.Load) and node.attr in self.chains:
                self.chain_site(node, ctx)
            self.expr(node.value, ctx)
            return
        if isinstance(node, (ast.Lambda,)):
            self.expr(node.body, ctx)
            return
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child, ctx)
            elif isinstance(child, ast.comprehension):
                self.expr(child.iter, ctx)
                for cond in child.ifs:
                    self.expr(cond, ctx)

    def call(self, node: ast.Call, ctx: _Context) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("hasattr", "getattr") and len(node.args) >= 2:
            member_node = node.args[1]
            if isinstance(member_node, ast.Constant) and isinstance(member_node.value, str):
                member = member_node.value
                if self.wants(member):
                    if func.id == "hasattr":
                        self.site(member, node.args[0], node, "probe", ctx)
                    else:
                        has_default = len(node.args) >= 3 or any(k.arg == "default" for k in node.keywords)
                        forced = "fallback" if has_default else None
                        self.site(member, node.args[0], node, "load", ctx, forced_guard=forced)
            for arg in node.args:
                self.expr(arg, ctx)
            return
        if isinstance(func, ast.Attribute) and self.wants(func.attr):
            self.site(func.attr, func.value, node, "call", ctx, call=node)
            self.expr(func.value, ctx)
        else:
            self.expr(func, ctx)
        for arg in node.args:
            self.expr(arg, ctx)
        for kw in node.keywords:
            self.expr(kw.value, ctx)

    def chain_site(self, node: ast.Attribute, ctx: _Context) -> None:
        """``<receiver>.model.embed_tokens`` read off the target: a chain member's site, guarded
        when a ``hasattr`` (or ``except AttributeError``) covers any link of it."""
        for spec in self.chains[node.attr]:
            links = spec.name.split(".")
            current: ast.expr = node
            for link in reversed(links):
                if not (isinstance(current, ast.Attribute) and current.attr == link):
                    break
                current = current.value
            else:
                assert spec.receiver is not None
                # A hasattr on any link (or an enclosing except) makes the read optional.
                guards = (self.guard_for(name, ctx) for name in (spec.name, *links))
                guard = next((g for g in guards if g != "none"), None)
                self.site(spec.name, current, node, "load", ctx, forced_guard=guard, receivers=spec.receiver)

    def site(
        self,
        member: str,
        receiver_node: ast.expr,
        node: ast.AST,
        access: str,
        ctx: _Context,
        call: ast.Call | None = None,
        forced_guard: str | None = None,
        receivers: re.Pattern[str] | None = None,
    ) -> None:
        receiver = ast.unparse(receiver_node)
        normalized = _normalize_receiver(receiver)
        if not (receivers or self.pack.model_receiver).search(normalized):
            return
        guard = forced_guard or self.guard_for(member, ctx)
        positional = 0
        keywords: tuple[str, ...] = ()
        if call is not None:
            positional = sum(1 for a in call.args if not isinstance(a, ast.Starred))
            keywords = tuple(k.arg for k in call.keywords if k.arg)
        self.sites.append(
            ContractSite(
                member=member,
                path=self.rel_path,
                line=getattr(node, "lineno", 0),
                column=getattr(node, "col_offset", 0) + 1 + self.indent,
                function=ctx.function,
                receiver=receiver,
                access=access,
                role=self.pack.role_of_receiver(normalized, member),
                guard=guard,
                positional_args=positional,
                keyword_args=keywords,
                branch=self.branch_for(ctx),
            )
        )

    def record_checks(self, stmt: ast.If, ctx: _Context) -> None:
        """Calls of a check function in an ``if`` test, with what a false result does."""
        if not self.checks:
            return
        for node in ast.walk(stmt.test):
            check = _check_call(node, self.checks)
            if check is None:
                continue
            negated = check in {_check_call(n.operand, self.checks) for n in ast.walk(stmt.test) if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not)}
            failing_branch = stmt.body if negated else stmt.orelse
            guard = "error" if _contains_raise(failing_branch) else "fallback"
            self.check_calls.append(
                CheckCall(check, self.rel_path, stmt.lineno, ctx.function, ast.unparse(node.args[0]), guard)  # type: ignore[attr-defined]
            )

    def guard_for(self, member: str, ctx: _Context) -> str:
        if member in ctx.and_guarded:
            return "fallback"
        for test, polarity, other_raises in ctx.conditions:
            if polarity and member in _positive_hasattrs(test, self.checks):
                return "error" if other_raises else "fallback"
            if not polarity and member in _negative_hasattrs(test, self.checks):
                return "error" if other_raises else "fallback"
        for guarded_member, guard in reversed(ctx.established):
            if guarded_member == member:
                return guard
        if ctx.try_guard:
            return ctx.try_guard
        return "none"

    def branch_for(self, ctx: _Context) -> str | None:
        markers = self.pack.eagle3_branch_markers
        for test, polarity, _ in reversed(ctx.conditions if markers else ()):
            text = ast.unparse(test)
            if any(marker in text for marker in markers):
                negated = text.strip().startswith("not ")
                return "eagle3" if polarity != negated else "not-eagle3"
        # A file only EAGLE-3 reaches (the rule pack's ``[branches] eagle3_files``, relative to
        # the package root; ``rel_path`` starts with the package's name).
        package, _, rest = self.rel_path.partition("/")
        return "eagle3" if package == self.pack.package and rest in self.pack.eagle3_branch_files else None


def _with_condition(ctx: _Context, test: ast.expr, polarity: bool, other_raises: bool = False) -> _Context:
    return _Context(ctx.function, (*ctx.conditions, (test, polarity, other_raises)), ctx.try_guard, ctx.established, ctx.and_guarded)


_DEF_RE = re.compile(r"^([ \t]*)(?:async[ \t]+)?def[ \t]+(\w+)")
_CLASS_RE = re.compile(r"^([ \t]*)class[ \t]+(\w+)")


def _indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _function_chunks(lines: list[str], hit_lines: list[int]) -> list[tuple[int, int, int, str]] | None:
    """For each hit line, the innermost enclosing ``def`` as (start, end, indent, qualname).

    Parsing only the functions that mention a member costs a fraction of parsing the whole
    (often very large) runner and worker files. None asks the caller to parse the whole file
    (a hit outside any function, or a layout this line-based cut cannot trust).
    """
    chunks: dict[int, tuple[int, int, int, str]] = {}
    for hit in hit_lines:
        hit_indent = _indent_of(lines[hit])
        start = None
        for j in range(hit, -1, -1):
            match = _DEF_RE.match(lines[j])
            # The enclosing def, or the def on the hit line itself (a member in its name).
            if match and (len(match.group(1)) < hit_indent or j == hit):
                start, indent, name = j, len(match.group(1)), match.group(2)
                break
        if start is None:
            if _in_module_import(lines, hit):
                continue  # ``from ...interfaces import (supports_eagle3, ...)``: no call site
            return None
        if start in chunks:
            continue
        def_line = start
        # Decorators belong to the function; include them so the chunk parses on its own.
        while start > 0 and lines[start - 1].strip().startswith("@") and _indent_of(lines[start - 1]) == indent:
            start -= 1
        end = len(lines)
        for k in range(def_line + 1, len(lines)):
            text = lines[k]
            stripped = text.strip()
            if not stripped or stripped.startswith("#"):
                continue
            if _indent_of(text) <= indent and (stripped[0].isalpha() or stripped[0] in "_@"):
                end = k
                break
        owner = ""
        for j in range(start, -1, -1):
            match = _CLASS_RE.match(lines[j])
            if match and len(match.group(1)) < indent:
                owner = match.group(2) + "."
                break
        chunks[start] = (start, end, indent, owner + name)
    ordered = sorted(chunks.values())
    # A closure inside another hit function is already part of the outer chunk.
    kept: list[tuple[int, int, int, str]] = []
    for chunk in ordered:
        if kept and chunk[0] < kept[-1][1]:
            continue
        kept.append(chunk)
    return kept


_IMPORT_NAME_RE = re.compile(r"^[ \t]*\(?[ \t]*\w+(?:[ \t]+as[ \t]+\w+)?[ \t]*,?[ \t]*\)?[ \t]*(?:#.*)?$")


def _in_module_import(lines: list[str], hit: int) -> bool:
    """Whether line ``hit`` belongs to a top-level import statement (its first line, or a name
    in its parenthesised list)."""
    first = lines[hit]
    if first.startswith(("from ", "import ")):
        return True
    if not _IMPORT_NAME_RE.match(first):
        return False
    for j in range(hit - 1, -1, -1):
        line = lines[j]
        if line.startswith(("from ", "import ")):
            return line.rstrip().endswith("(")
        if not _IMPORT_NAME_RE.match(line):
            return False
    return False


def _parse_chunk(lines: list[str], start: int, end: int, indent: int) -> ast.Module | None:
    # Leading newlines put the chunk at its real lines without re-walking the tree.
    body = ["\n"] * start
    for line in lines[start:end]:
        if line.strip() and not line[:indent].isspace() and indent:
            return None
        body.append(line[indent:] if line.strip() else "\n")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse("".join(body))
    except (SyntaxError, ValueError, RecursionError):
        return None
    return tree


def scan_file(
    engine: Engine,
    path: Path | str,
    needles: tuple[bytes, ...],
    checks: CheckFunctions | None = None,
    check_calls: list[CheckCall] | None = None,
) -> list[ContractSite] | FileError | None:
    """Call sites in one engine file; None when the byte pre-filter rules it out.

    Calls of the ``checks`` functions are appended to ``check_calls`` when it is given."""
    data = read_source(str(path))
    if isinstance(data, FileError):
        return data
    if not any(n in data for n in needles):
        return None
    text = decode_source(str(path), data)
    if isinstance(text, FileError):
        return text
    model_file = engine.pack.plugin_model_pattern
    if engine.plugins and model_file is not None and not str(path).startswith(str(engine.root) + os.sep) and model_file.search(text):
        return None  # a plugin's model file: the index reads it, its calls are not the engine's
    rel = _relative(engine, Path(path))
    collector = _SiteCollector(engine, rel, engine.pack.members, checks)
    lines = source_lines(text)
    hits = _hit_lines(text, needles)
    chunks = _function_chunks(lines, hits)
    if chunks is not None:
        trees = [(_parse_chunk(lines, a, b, indent), indent, name) for a, b, indent, name in chunks]
        if all(tree is not None for tree, _, _ in trees):
            for tree, indent, _name in trees:
                assert tree is not None
                collector.indent = indent
                collector.block(tree.body, _Context())
            _qualify(collector.sites, chunks)
            _qualify(collector.check_calls, chunks)
            if check_calls is not None:
                check_calls.extend(collector.check_calls)
            return collector.sites
    whole = parse_text(str(path), text)
    if isinstance(whole, FileError):
        return whole
    collector.indent = 0
    collector.block(whole.body, _Context())
    if check_calls is not None:
        check_calls.extend(collector.check_calls)
    return collector.sites


def _relative(engine: Engine, path: Path) -> str:
    """``vllm/...`` for an engine file, ``vllm_ascend/...`` for a plugin's."""
    for root in (engine.source_root, *(p.source_root for p in engine.plugins)):
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            continue
    return path.as_posix()


def _hit_lines(text: str, needles: tuple[bytes, ...]) -> list[int]:
    pattern = re.compile("|".join(re.escape(n.decode()) for n in needles))
    hits: list[int] = []
    line, last = 0, 0
    for match in pattern.finditer(text):
        line += count_line_ends(text, last, match.start())
        last = match.start()
        if not hits or hits[-1] != line:
            hits.append(line)
    return hits


_Located = TypeVar("_Located", ContractSite, CheckCall)


def _qualify(sites: list[_Located], chunks: list[tuple[int, int, int, str]]) -> None:
    """Chunks parse without their class: put ``Class.`` back in front of function names."""
    for i, site in enumerate(sites):
        for start, end, _, qualname in chunks:
            if start < site.line <= end:
                head = qualname.rsplit(".", 1)[0] if "." in qualname else ""
                if head and not site.function.startswith(head + "."):
                    sites[i] = dataclasses.replace(site, function=f"{head}.{site.function}")
                break


def contract_needles(engine: Engine, extra: tuple[str, ...] = ()) -> tuple[bytes, ...]:
    """The byte strings a file must contain to hold a call site: the fewest that say as much.

    A needle containing another needle adds nothing (any file or line holding it also holds the
    shorter one), and every needle costs a pass over the engine's 50-70 MB of source."""
    names = set(engine.pack.members) | set(engine.pack.scan_needles) | set(extra)
    minimal = {n for n in names if not any(other != n and other in n for other in names)}
    return tuple(sorted(n.encode() for n in minimal))


def extract_contract(engine: Engine, extension_for: Callable[[Engine], ContractExtension] | None = None) -> Contract:
    """The contract of ``engine``: its call sites, and the facts its adapter's extension
    (``extension_for``: ``EngineAdapter.contract_extension``) adds."""
    pack = engine.pack
    members = {
        name: MemberContract(name=name, kind=spec.kind, known=True, summary=spec.summary)
        for name, spec in pack.members.items()
    }
    contract = Contract(engine=engine, members=members)
    # The engine's own facts: check functions that vouch for members (vLLM's supports_eagle3).
    extension = extension_for(engine) if extension_for is not None else ContractExtension()
    contract.errors.extend(extension.errors())
    checks: CheckFunctions = extension.check_functions()
    check_calls: list[CheckCall] = []
    needles = contract_needles(engine, tuple(checks))
    for path in engine.call_site_files():
        result = scan_file(engine, path, needles, checks, check_calls)
        if result is None:
            continue
        contract.scanned_files += 1
        if isinstance(result, FileError):
            contract.errors.append(result)
            continue
        for site in result:
            entry = members.get(site.member)
            if entry is None:
                entry = members[site.member] = MemberContract(site.member, "method" if site.access == "call" else "attribute", known=False)
            entry.sites.append(site)
    for name, spec in pack.members.items():
        if spec.required and not members[name].fatal_sites(spec.role):
            # Required by the project's configuration: the "call site" is the setting itself.
            members[name].sites.append(
                ContractSite(
                    member=name,
                    path=spec.origin or "pyproject.toml",
                    line=0,
                    column=0,
                    function="[tool.eagle3lint] extra-members",
                    receiver="model",
                    access="call" if spec.kind == "method" else "load",
                    role=spec.role,
                    guard="none",
                )
            )
    contract.extra.update(extension.extra(check_calls))
    contract.launch_refusals = read_launch_refusals(engine)
    return contract
