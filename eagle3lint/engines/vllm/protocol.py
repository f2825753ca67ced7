"""The declared half of vLLM's EAGLE-3 contract, read from ``interfaces.py``.

Since 0.10.1 vLLM states the contract as a ``@runtime_checkable`` protocol: ``supports_eagle3``
is ``isinstance(model, SupportsEagle3)``, which holds only when the model has every protocol
member (the ``supports_eagle3`` ClassVar flag, so in practice: the class inherits the protocol).
Its methods started as stubs; later releases gave them default bodies that walk to the decoder
("the holder") and assert it inherits ``EagleModelMixin``. All of this is read from the tree in
front of us, so each release is checked against its own rules. Older trees have no protocol and
:func:`read_protocol` returns ``None``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagle3lint.common.escape import line_text
from eagle3lint.common.findings import FileError
from eagle3lint.engines.vllm.pack import VllmPack, vllm_pack
from eagle3lint.model.contract_types import CheckCall
from eagle3lint.source.engine import Engine
from eagle3lint.source.sources import decode_source, parse_text, read_source
from eagle3lint.source.summary_walk import dotted, is_stub_body

if TYPE_CHECKING:
    # Loaded where the tables are read, or by the cache's reader when a stored contract holds them.
    from eagle3lint.engines.vllm.drafter_load import DrafterLoad
    from eagle3lint.engines.vllm.model_types import ModelTypeTables

_STUB = "stub"
_DEFAULT = "default"


@dataclass(frozen=True)
class ProtocolMember:
    name: str
    kind: str  # "flag" (ClassVar) | "attribute" | "method"
    owner: str  # the protocol class that declares it
    line: int
    value: str | None = None  # the default value's source, for flags and attributes
    body: str | None = None  # methods: "stub" | "default"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "owner": self.owner,
            "line": self.line,
            "value": self.value,
            "body": self.body,
        }


@dataclass(frozen=True)
class Delegation:
    """One step the default setter tries first: ``self.get_language_model()`` or ``self.language_model``."""

    kind: str  # "call" | "attr"
    name: str

    def render(self) -> str:
        return f"self.{self.name}()" if self.kind == "call" else f"self.{self.name}"


@dataclass
class HolderWalk:
    """What a protocol default body does to find the object that records the layer ids."""

    method: str
    line: int
    delegations: list[Delegation] = field(default_factory=list)  # tried in order (hasattr-guarded)
    inner: str | None = None  # attribute taken from the object reached (``.model``)
    inner_optional: bool = False  # ``getattr(obj, "model", obj)``: falls back to the object itself
    asserted_mixin: str | None = None
    required_attributes: list[str] = field(default_factory=list)
    mixin_call: str | None = None

    def describe(self) -> str:
        steps = [d.render() for d in self.delegations] + ["self"]
        text = " or ".join(steps)
        if self.inner:
            text += f", then .{self.inner}" + (" (if present)" if self.inner_optional else "")
        if self.asserted_mixin:
            text += f"; asserts it inherits {self.asserted_mixin}"
        if self.required_attributes:
            text += "; asserts it has " + ", ".join(f".{a}" for a in self.required_attributes)
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "line": self.line,
            "delegations": [d.render() for d in self.delegations],
            "inner": self.inner,
            "inner_optional": self.inner_optional,
            "asserted_mixin": self.asserted_mixin,
            "required_attributes": self.required_attributes,
            "mixin_call": self.mixin_call,
        }


@dataclass
class MixinInfo:
    name: str
    line: int
    members: list[str]
    setter: str | None  # the mixin method that records the layer ids
    collect_methods: list[str]  # mixin methods a forward calls to collect (``_maybe_add_hidden_state``)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "line": self.line,
            "members": self.members,
            "setter": self.setter,
            "collect_methods": self.collect_methods,
        }


@dataclass
class VllmProtocol:
    module: str  # vllm.model_executor.models.interfaces
    path: str  # relative to the source root
    name: str
    line: int
    runtime_checkable: bool
    chain: list[str]  # the protocol and its protocol bases, most derived first
    members: list[ProtocolMember]
    check_function: str | None = None
    check_line: int = 0
    mixin: MixinInfo | None = None
    walks: dict[str, HolderWalk] = field(default_factory=dict)  # by protocol method name

    def member(self, name: str) -> ProtocolMember | None:
        for member in self.members:
            if member.name == name:
                return member
        return None

    @property
    def flags(self) -> list[ProtocolMember]:
        return [m for m in self.members if m.kind == "flag"]

    @property
    def methods(self) -> list[ProtocolMember]:
        return [m for m in self.members if m.kind == "method"]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "module": self.module,
            "path": self.path,
            "line": self.line,
            "runtime_checkable": self.runtime_checkable,
            "chain": self.chain,
            "members": [m.to_json() for m in self.members],
            "check_function": self.check_function,
            "check_line": self.check_line,
            "mixin": self.mixin.to_json() if self.mixin else None,
            "default_walks": {name: walk.to_json() for name, walk in self.walks.items()},
        }


@dataclass(frozen=True)
class AllowList:
    """Older speculative configs refuse EAGLE-3 unless the target's HF ``model_type`` contains
    one of these words (gone in 0.22.0). Checked against the checkpoint's config, not the class:
    each model class is judged through its architectures' model types (``model_types``, E3L017)."""

    path: str
    line: int
    model_types: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "model_types": list(self.model_types)}


@dataclass(frozen=True)
class PPGuard:
    """The runner reads the decoder's PP flag before it allows EAGLE-3 with pipeline parallelism."""

    path: str
    line: int
    flag: str
    # The model-runner generation whose files hold it ("" where the pack names none): the other
    # generation never refuses PP with EAGLE-3.
    runner: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "flag": self.flag, "runner": self.runner or None}


def read_pp_guard(engine: Engine, flag: str, files: tuple[str, ...], runner_of: Callable[[str], str] | None = None) -> PPGuard | None:
    """The first line of the pack's PP-guard files that reads ``flag`` (a plain text search: the
    flag is a distinctive name, and reading it is what the guard does)."""
    if not flag:
        return None
    for rel in files:
        path = engine.root / rel
        data = read_source(str(path)) if path.is_file() else None
        if not isinstance(data, bytes) or flag.encode() not in data:
            continue
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
            if flag in line and not line.lstrip().startswith("#"):
                runner = runner_of(rel) if runner_of is not None else ""
                return PPGuard(Path(path).relative_to(engine.source_root).as_posix(), number, flag, runner)
    return None


@dataclass
class VllmContract:
    """``Contract.extra["vllm"]``: the protocol (or None), the check function's call sites and
    the config's model-type allow-list (or None)."""

    protocol: VllmProtocol | None
    check_sites: list[CheckCall] = field(default_factory=list)
    allow_list: AllowList | None = None
    # Where the runner refuses EAGLE-3 with pipeline parallelism for a model whose decoder does
    # not set the pack's PP flag (``supports_aux_hidden_states_over_pp``): (path, line), or None
    # where no runner reads it (PP with EAGLE-3 is then never refused per model).
    pp_guard: PPGuard | None = None
    # Each architecture's HF model types, read only where there is an allow-list to judge them by.
    model_types: ModelTypeTables | None = None
    # What the EAGLE proposer reads off the target while the drafter loads, before the runner's
    # support check (None where the release's proposer raises on no such read).
    drafter_load: DrafterLoad | None = None

    @classmethod
    def from_scan(
        cls, protocol: VllmProtocol | None, check_calls: list[CheckCall], allow_list: AllowList | None = None,
        pp_guard: PPGuard | None = None, model_types: ModelTypeTables | None = None,
        drafter_load: DrafterLoad | None = None,
    ) -> VllmContract:
        return cls(protocol, sorted(check_calls, key=lambda c: (c.path, c.line)), allow_list, pp_guard, model_types, drafter_load)

    def to_json(self) -> dict[str, Any]:
        return {
            "protocol": self.protocol.to_json() if self.protocol else None,
            "check_sites": [
                {"check": s.check, "path": s.path, "line": s.line, "function": s.function, "argument": s.argument, "guard": s.guard}
                for s in self.check_sites
            ],
            "model_type_allow_list": self.allow_list.to_json() if self.allow_list else None,
            "model_types": self.model_types.to_json() if self.model_types else None,
            "pp_guard": self.pp_guard.to_json() if self.pp_guard else None,
            "drafter_load": self.drafter_load.to_json() if self.drafter_load else None,
        }

    def __str__(self) -> str:
        """The contract's text for ``eagle3lint contract``: one fact a line; the analysed text in
        a line (names, paths, model types) escaped, so that the line breaks are the tool's."""
        proto = self.protocol
        tail: list[str] = []
        if self.allow_list is not None:
            tail.append(
                f"EAGLE-3 only for HF model_types containing {', '.join(self.allow_list.model_types)} "
                f"({self.allow_list.path}:{self.allow_list.line})"
            )
            if self.model_types is not None:
                origin = f"  model types of each architecture from {self.model_types.origin}"
                tail.append(origin + (f" and {self.model_types.registry_path}" if self.model_types.registry_path else ""))
        drafter = str(self.drafter_load) if self.drafter_load is not None else ""
        if proto is None:
            return _text(["no EAGLE-3 protocol in this tree: the members above are the whole contract", *tail]) + drafter
        lines = [
            f"protocol {proto.name} ({proto.path}:{proto.line})"
            + (", runtime_checkable" if proto.runtime_checkable else ""),
        ]
        if proto.check_function:
            lines.append(
                f"  check: {proto.check_function}(model) is isinstance(model, {proto.name}): "
                "true only when the model has every member below"
            )
        for member in proto.members:
            detail = member.kind
            if member.body:
                detail += f", {member.body} body"
            if member.value is not None:
                detail += f" = {member.value}"
            lines.append(f"  {member.name} ({detail}; from {member.owner})")
        if proto.mixin:
            mixin = proto.mixin
            lines.append(
                f"mixin {mixin.name}: setter {mixin.setter or '?'}; collect with "
                + (", ".join(mixin.collect_methods) or "?")
            )
        for walk in proto.walks.values():
            lines.append(f"default {walk.method}: {walk.describe()}")
        for site in self.check_sites:
            raises = "raises when false" if site.guard == "error" else "falls back when false"
            lines.append(f"  called at {site.path}:{site.line}  {site.function}  {site.check}({site.argument})  {raises}")
        return _text(lines + tail) + drafter


def _text(lines: list[str]) -> str:
    """Lines for a block of the tool's text: each line's analysed text escaped (a model type or
    a path holding a line break stays on its line), each line ended."""
    return "".join(line_text(line) + "\n" for line in lines)


# ---- reading interfaces.py -------------------------------------------------------------------


def _is_classvar(annotation: ast.expr | None) -> bool:
    name = dotted(annotation) if annotation is not None else None
    return bool(name) and name.split(".")[-1] == "ClassVar"  # type: ignore[union-attr]


def _decorators(node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    out = []
    for dec in node.decorator_list:
        name = dotted(dec.func if isinstance(dec, ast.Call) else dec)
        if name:
            out.append(name.split(".")[-1])
    return out


def _members_of(cls: ast.ClassDef) -> list[ProtocolMember]:
    out: list[ProtocolMember] = []
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            value = ast.unparse(stmt.value) if stmt.value is not None else None
            kind = "flag" if _is_classvar(stmt.annotation) else "attribute"
            out.append(ProtocolMember(stmt.target.id, kind, cls.name, stmt.lineno, value=value))
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name) and not target.id.startswith("__"):
                    out.append(ProtocolMember(target.id, "attribute", cls.name, stmt.lineno, value=ast.unparse(stmt.value)))
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and not stmt.name.startswith("__"):
            body = _STUB if is_stub_body(stmt.body) else _DEFAULT
            out.append(ProtocolMember(stmt.name, "method", cls.name, stmt.lineno, body=body))
    return out


def _isinstance_target(fn: ast.FunctionDef) -> str | None:
    """``return isinstance(model, SupportsEagle3)`` -> "SupportsEagle3"."""
    for stmt in fn.body:
        if isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Call):
            call = stmt.value
            if dotted(call.func) == "isinstance" and len(call.args) == 2:
                return dotted(call.args[1])
    return None


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _self_attr_writes(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    return {
        node.attr
        for node in ast.walk(fn)
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _is_self(node.value)
    }


def _self_attr_reads(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    return {
        node.attr
        for node in ast.walk(fn)
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and _is_self(node.value)
    }


def _self_calls(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    return {
        node.func.attr
        for node in ast.walk(fn)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _is_self(node.func.value)
    }


def _read_mixin(cls: ast.ClassDef, capture: str) -> MixinInfo:
    methods = {s.name: s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    members = [m.name for m in _members_of(cls)]
    setter = next((name for name, fn in methods.items() if capture in _self_attr_writes(fn)), None)
    setter_helpers = _self_calls(methods[setter]) if setter else set()
    collect = [
        name
        for name, fn in methods.items()
        if name != setter and name not in setter_helpers and capture in _self_attr_reads(fn)
        and capture not in _self_attr_writes(fn)
    ]
    return MixinInfo(cls.name, cls.lineno, members, setter, collect)


class _WalkReader:
    """Interprets a protocol default body: which object it reaches, and what it asserts.

    Values are tracked symbolically: ``parent`` (self, or what a hasattr-guarded delegation
    returned) and ``holder`` (``parent.<inner>``, or ``getattr(parent, inner, parent)``).
    """

    def __init__(self, method: str, line: int) -> None:
        self.walk = HolderWalk(method=method, line=line)
        self.env: dict[str, str] = {"self": "self"}

    def value_of(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return self.env.get(node.id)
        if (
            isinstance(node, ast.Attribute)
            and self.value_of(node.value) in ("parent", "self")
            and self.walk.inner in (None, node.attr)
        ):
            self.walk.inner = node.attr
            return "holder"
        if isinstance(node, ast.Call) and dotted(node.func) == "getattr" and len(node.args) == 3:
            base = self.value_of(node.args[0])
            member = node.args[1]
            if base in ("parent", "self") and isinstance(member, ast.Constant) and isinstance(member.value, str):
                self.walk.inner = member.value
                self.walk.inner_optional = self.value_of(node.args[2]) in ("parent", "self")
                return "holder"
        return None

    def delegation(self, test: ast.expr, body: list[ast.stmt]) -> bool:
        """``if hasattr(self, "x"): parent = self.x()`` -> a delegation step."""
        if not (isinstance(test, ast.Call) and dotted(test.func) == "hasattr" and len(test.args) == 2):
            return False
        if not (isinstance(test.args[0], ast.Name) and test.args[0].id == "self"):
            return False
        if len(body) != 1 or not isinstance(body[0], ast.Assign) or len(body[0].targets) != 1:
            return False
        target, value = body[0].targets[0], body[0].value
        if not isinstance(target, ast.Name):
            return False
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and isinstance(value.func.value, ast.Name) and value.func.value.id == "self":
            self.walk.delegations.append(Delegation("call", value.func.attr))
        elif isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "self":
            self.walk.delegations.append(Delegation("attr", value.attr))
        else:
            return False
        self.env[target.id] = "parent"
        return True

    def statements(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.statement(stmt)

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            if isinstance(stmt.value, ast.Name) and stmt.value.id == "self":
                self.env[name] = "parent"
                return
            value = self.value_of(stmt.value)
            if value is not None:
                self.env[name] = value
            return
        if isinstance(stmt, ast.If):
            if self.delegation(stmt.test, stmt.body):
                rest = stmt.orelse
                while len(rest) == 1 and isinstance(rest[0], ast.If) and self.delegation(rest[0].test, rest[0].body):
                    rest = rest[0].orelse
                self.statements(rest)
            return
        if isinstance(stmt, ast.Assert):
            self.assertion(stmt.test)
            return
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            func = stmt.value.func
            if isinstance(func, ast.Attribute) and self.value_of(func.value) == "holder":
                self.walk.mixin_call = func.attr

    def assertion(self, test: ast.expr) -> None:
        if not isinstance(test, ast.Call) or len(test.args) != 2:
            return
        name = dotted(test.func)
        subject = test.args[0]
        if name == "isinstance":
            if self.value_of(subject) == "holder":
                self.walk.asserted_mixin = dotted(test.args[1])
        elif name == "hasattr" and isinstance(test.args[1], ast.Constant) and isinstance(test.args[1].value, str):
            attr = test.args[1].value
            base = self.value_of(subject)
            if base == "parent" and self.walk.inner is None:
                self.walk.inner = attr
            elif base == "parent" and self.walk.inner == attr:
                pass
            elif base == "holder":
                self.walk.required_attributes.append(attr)


def _read_walk(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> HolderWalk:
    reader = _WalkReader(fn.name, fn.lineno)
    reader.statements(fn.body)
    return reader.walk


def parse_interfaces(tree: ast.Module, module: str, rel_path: str, vpack: VllmPack) -> VllmProtocol | None:
    classes = {s.name: s for s in tree.body if isinstance(s, ast.ClassDef)}
    proto = classes.get(vpack.protocol)
    if proto is None:
        return None
    chain: list[str] = []
    members: list[ProtocolMember] = []
    seen: set[str] = set()
    queue = [proto]
    while queue:
        cls = queue.pop(0)
        if cls.name in chain:
            continue
        chain.append(cls.name)
        for member in _members_of(cls):
            if member.name not in seen:
                seen.add(member.name)
                members.append(member)
        for base in cls.bases:
            name = dotted(base)
            if name in classes:
                queue.append(classes[name])
    result = VllmProtocol(
        module=module,
        path=rel_path,
        name=proto.name,
        line=proto.lineno,
        runtime_checkable="runtime_checkable" in _decorators(proto),
        chain=chain,
        members=members,
    )
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.FunctionDef)
            and "overload" not in _decorators(stmt)
            and _isinstance_target(stmt) == proto.name
        ):
            result.check_function, result.check_line = stmt.name, stmt.lineno
            break
    mixin = classes.get(vpack.mixin)
    if mixin is not None:
        result.mixin = _read_mixin(mixin, vpack.capture_attribute)
    for stmt in proto.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and not is_stub_body(stmt.body):
            result.walks[stmt.name] = _read_walk(stmt)
    return result


def read_protocol(engine: Engine) -> tuple[VllmProtocol | None, FileError | None]:
    """The protocol in the tree's interfaces module, or None where the tree has none."""
    vpack = vllm_pack(engine.pack)
    parts = vpack.interfaces_module.split(".")
    path = engine.root.joinpath(*parts).with_suffix(".py")
    if not path.is_file():
        return None, None
    data = read_source(str(path))
    if isinstance(data, FileError):
        return None, data
    if vpack.protocol.encode() not in data:
        return None, None
    text = decode_source(str(path), data)
    if isinstance(text, FileError):
        return None, text
    tree = parse_text(str(path), text)
    if isinstance(tree, FileError):
        return None, tree
    module = ".".join([engine.pack.package, *parts])
    rel = Path(path).relative_to(engine.source_root).as_posix()
    return parse_interfaces(tree, module, rel, vpack), None


_DEF_LINE = re.compile(r"^(\s*)(?:async\s+)?def\s")


def _enclosing_function(lines: list[str], hit: int) -> tuple[int, int] | None:
    """1-based (start, end) of the ``def`` around line index ``hit``, by indentation."""
    indent = len(lines[hit]) - len(lines[hit].lstrip())
    for start in range(hit, -1, -1):
        match = _DEF_LINE.match(lines[start])
        if match and len(match.group(1)) < indent:
            depth = len(match.group(1))
            end = len(lines)
            for k in range(start + 1, len(lines)):
                text = lines[k]
                if text.strip() and not text.lstrip().startswith("#") and len(text) - len(text.lstrip()) <= depth:
                    end = k
                    break
            return start + 1, end
    return None


def _allow_list_in(tree: ast.AST) -> tuple[int, tuple[str, ...]] | None:
    lists: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, (ast.List, ast.Tuple)) and value.elts and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
            ):
                lists[node.targets[0].id] = [e.value for e in value.elts]  # type: ignore[attr-defined]
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        text = ast.unparse(node.test)
        if "eagle3" not in text or "model_type" not in text:
            continue
        names = [n.id for n in ast.walk(node.test) if isinstance(n, ast.Name) and n.id in lists]
        if names:
            return node.lineno, tuple(lists[names[0]])
        words = [
            c.left.value
            for c in ast.walk(node.test)
            if isinstance(c, ast.Compare) and isinstance(c.left, ast.Constant) and isinstance(c.left.value, str)
            and any(isinstance(op, (ast.In, ast.NotIn)) for op in c.ops) and "model_type" in ast.unparse(c)
        ]
        if words:
            return node.lineno, tuple(words)
    return None


def read_allow_list(engine: Engine) -> AllowList | None:
    """The speculative config's model-type allow-list, when the tree has one."""
    from eagle3lint.source.snippets import SnippetReader

    vpack = vllm_pack(engine.pack)
    reader = SnippetReader()
    for rel in vpack.allow_list_files:
        path = engine.root / rel
        if not path.is_file():
            continue
        lines = reader.lines(str(path))
        if lines is None:
            continue
        for i, line in enumerate(lines):
            if "model_type" not in line or not any("eagle3" in lines[j] for j in range(max(0, i - 6), min(len(lines), i + 6))):
                continue
            span = _enclosing_function(lines, i)
            tree = reader.parse(str(path), *span) if span else None
            found = _allow_list_in(tree) if tree is not None else None
            if found is not None and span is not None:
                line_in_file = found[0] + span[0] - 1 - (1 if lines[span[0] - 1][:1].isspace() else 0)
                return AllowList(Path(path).relative_to(engine.source_root).as_posix(), line_in_file, found[1])
    return None
